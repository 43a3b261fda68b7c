import type { Browser, Page, Target } from "puppeteer-core";
import { defaultBodyLimits, type BodyLimits } from "../fetch/bodyLimits.js";
import { FallbackFetcher } from "../fetch/fallbackFetcher.js";
import type { RunContext } from "../fetch/connectionRules.js";
import { errorMessage, logger } from "../log/logger.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";
import { pageLinkUrls, tryNormalizeCrawlUrl, withoutHash } from "../scope/urls.js";
import { withTimeout } from "../util/deadline.js";
import { installQueryWatch, queriedSelectors } from "./queryWatch.js";
import { pageFavicon } from "./favicon.js";
import { clickClaims, installBehaviors, runBehaviors, type BehaviorHooks, type BehaviorOutcome, type BehaviorSettings } from "../behaviors/behaviors.js";
import type { BrowserHost } from "../browser/browserHost.js";
import { DEFAULT_TAB_CAPTURE, type TabCaptureOptions } from "../capture/captureRules.js";
import { OriginRedirects } from "../capture/requests/originOverride.js";
import type { EarlierAttempts } from "../capture/requests/earlierAttempts.js";
import { PageCapture, type CapturedSummary, type PageAttempt } from "../capture/pageCapture.js";
import { DialogGuard } from "./dialogs.js";
import { isRenderedDocumentType } from "../capture/documentTypes.js";
import { readPage } from "./linkExtract.js";
import { DEFAULT_LINK_SELECTORS, type LinkKinds, type LinkSelector } from "./linkSelectors.js";
import { takePageExtracts, type ExtractOptions, type PageExtracts } from "./pageExtracts.js";
import { PageTimings } from "./pageTimings.js";
import { PopupCloser } from "./popups.js";
import { watchServiceWorkers } from "./serviceWorkers.js";
import { applyTabSettings, type TabSettings } from "../browser/pageSetup.js";
import type { WaitUntilEvent } from "../browser/browserSetup.js";
import { ContentCheck } from "./contentCheck.js";
import type { LoadOptions, PageLoadResult } from "./pageLoadResult.js";

export type { LoadOptions, PageLoadResult } from "./pageLoadResult.js";

export interface PageWorkerOptions {
  pageLoadTimeoutMs: number;
  netIdleWaitMs: number;
  /** --netIdleMaxRequests: requests still in flight that the net-idle waits tolerate (default 0). */
  netIdleMaxRequests?: number;
  /** --waitUntil: what the navigation waits for (default: load). */
  waitUntil?: readonly WaitUntilEvent[];
  userAgent: string | null;
  /** Device viewport and language header of every tab (--mobileDevice, --lang). */
  tab?: TabSettings;
  behaviors: BehaviorSettings;
  /** Text and screenshots to take of each loaded page (--text, --screenshot). */
  extracts?: ExtractOptions;
  /** --rateLimitStatusCodes: a page document with one of these is a rate-limit answer, never stored. */
  rateLimitStatusCodes?: readonly number[];
  /** Size cap and storage limits of every body (--maxResourceSize, --sizeLimit, --diskUtilization). */
  limits?: BodyLimits;
  /** --selectLinks: where a page's links are read from (absent: a[href] and area[href]). */
  linkSelectors?: readonly LinkSelector[];
  /** --extractFormLinks, --extractFeedLinks: GET forms' and feeds' links join the page's (absent: both). */
  linkKinds?: LinkKinds;
  /** Whether the autoclick behavior may click a link to this URL (shared by the process's tabs: once each). */
  claimClick?: (url: string) => boolean;
  /** --failOnContentCheck: pages get the function that fails the crawl (contentCheck.ts). */
  contentCheck?: boolean;
  /** --serviceWorker, --originOverride, --rateLimitOnMatch, --saveStorage (capture/captureRules.ts). */
  tabCapture?: TabCaptureOptions;
  /** Told when the worker's tab opens and closes (the live view casts it: src/screencast/). */
  tabWatch?: TabWatch;
  /** The run's address policy, --header rules, blocking and socket gate: the tab and the fetches outside it obey them. */
  context: RunContext;
  /**
   * What the attempts of each page stored, shared by the process's tabs: a retry answers those requests from the
   * archive (a retry may be taken by another tab). Absent: every attempt fetches everything.
   */
  earlierAttempts?: EarlierAttempts;
  /** --captureMode hybrid: what each page's scripts look for in their document is watched (queryWatch.ts) and read with the page. */
  watchQueries?: boolean;
}

/** Who wants to know the worker's current tab; both calls return at once and never throw. */
export interface TabWatch {
  tabOpened(tab: Page): void;
  tabClosed(): void;
}

/**
 * One browser tab that loads pages one at a time; its capture hands everything they fetch to the
 * exchange sink (the capture pipeline).
 */
export class PageWorker {
  private tab: Page | null = null;
  private tabBrowser: Browser | null = null;
  private capture: PageCapture | null = null;
  private popups: PopupCloser | null = null;
  private dialogs: DialogGuard | null = null;
  /** What the current page's behaviors asked to be crawled. */
  private behaviorLinks = new Set<string>();
  private readonly behaviorHooks: BehaviorHooks;
  private readonly fetcher: FallbackFetcher;
  private readonly limits: BodyLimits;
  private behaviorOutcome: BehaviorOutcome | undefined;
  private contentCheck: ContentCheck | null = null;

  constructor(
    readonly id: number,
    private readonly host: BrowserHost,
    private readonly sink: ExchangeSink,
    private readonly options: PageWorkerOptions,
  ) {
    this.limits = options.limits ?? defaultBodyLimits();
    const acceptLanguage = options.tab?.acceptLanguage;
    // What the browser sends elsewhere (--originOverride), fetches outside it do too.
    const redirects = new OriginRedirects(options.tabCapture?.originOverride ?? []);
    this.fetcher = new FallbackFetcher({ rules: options.context, userAgent: options.userAgent, limits: this.limits, headers: acceptLanguage ? [["Accept-Language", acceptLanguage]] : [], target: (url) => redirects.target(url) });
    this.behaviorHooks = {
      addLink: (url) => {
        if (this.behaviorLinks.size < MAX_BEHAVIOR_LINKS) this.behaviorLinks.add(url);
      },
      claimClick: options.claimClick ?? clickClaims(),
    };
  }

  /**
   * The tab, opened (or reset: the last page's end stopped its scripts) for the next page. Called before a
   * host's turn is taken too (crawl/pages/pageSteps.ts), so that a turn is the page's request, not the tab's start.
   */
  async readyTab(): Promise<{ tab: Page; capture: PageCapture; popups: PopupCloser }> {
    const ready = await this.ensureTab();
    if (ready.capture.scripts.stopped) {
      // The last page's end stopped the tab's scripts. Unless it was quiet then, it goes to about:blank first
      // (pageScripts.ts). A tab that cannot do either fails the attempt (a fresh tab is opened for the retry).
      if (!ready.capture.scripts.endedQuiet) await ready.tab.goto("about:blank", { timeout: this.options.pageLoadTimeoutMs });
      await ready.capture.scripts.allow();
    }
    return ready;
  }

  private async ensureTab(): Promise<{ tab: Page; capture: PageCapture; popups: PopupCloser }> {
    const browser = await this.host.browser();
    if (this.tab && this.capture && this.popups && !this.tab.isClosed() && this.tabBrowser === browser) return { tab: this.tab, capture: this.capture, popups: this.popups };
    // A window of its own: of several tabs in one window only the front one is visible, and a hidden
    // page neither renders nor fires IntersectionObservers, so scrolling would load nothing in it.
    const tab = await browser.newPage({ type: "window" });
    this.tabBrowser = browser;
    if (this.options.tabCapture && !this.options.tabCapture.bypassServiceWorker) watchServiceWorkers(browser, (target, scriptUrl) => this.captureServiceWorker(target, scriptUrl));
    await applyTabSettings(tab, this.options.userAgent, this.options.tab);
    if (this.options.watchQueries) await installQueryWatch(tab); // first, so it wraps the document before any script runs
    this.dialogs = new DialogGuard(tab);
    await installBehaviors(tab, this.options.behaviors, this.behaviorHooks);
    const capture = await PageCapture.attach(tab, this.sink, this.fetcher, this.limits, this.options.rateLimitStatusCodes, this.options.tabCapture);
    const popups = await PopupCloser.attach(tab);
    this.contentCheck = this.options.contentCheck ? await ContentCheck.attach(tab) : null;
    this.tab = tab;
    this.capture = capture;
    this.popups = popups;
    this.options.tabWatch?.tabOpened(tab);
    return { tab, capture, popups };
  }

  /** A page's service worker (--serviceWorker enabled): what it fetches from now on, and its script. */
  private async captureServiceWorker(target: Target, scriptUrl: string): Promise<void> {
    const cdp = await target.createCDPSession();
    await PageCapture.attachWorker(cdp, this.sink, this.fetcher, this.limits, this.options.tabCapture ?? DEFAULT_TAB_CAPTURE);
    if (await this.sink.hasStoredResponse(scriptUrl)) return;
    const script = await this.fetcher.fullResponse(scriptUrl, []);
    if (script) await this.sink.store(script);
  }

  async load(url: string, { conditional, lastAttempt = false, retry = false, skipIfArchived = false, sink }: LoadOptions = {}): Promise<PageLoadResult> {
    const { tab, capture, popups } = await this.readyTab();
    this.behaviorOutcome = undefined;
    this.behaviorLinks = new Set();
    this.dialogs?.beginPage();
    const stores = this.options.earlierAttempts?.of(url) ?? null;
    const attempt = capture.beginPage(url, { conditional, lastAttempt, skipIfArchived, sink, stores, answersFromStores: retry });
    popups.beginPage();
    this.contentCheck?.beginPage();
    const timings = new PageTimings();
    const result = withPopupLinks(await this.loadPage(tab, capture, attempt, url, timings), popups, url);
    timings.log(url);
    this.contentCheck?.listen(false);
    const failedCheck = this.contentCheck?.failure;
    if (failedCheck !== undefined) return { document: null, title: "", links: [], error: `content check failed: ${failedCheck}`, truncated: [], contentCheckFailed: failedCheck };
    if (attempt.loggedOut) return { document: null, title: "", links: [], error: `logged out: redirected to the login page ${attempt.loggedOut.loginPage}`, truncated: [], loggedOut: attempt.loggedOut };
    if (attempt.proxyFailure) return { document: null, title: "", links: [], error: attempt.proxyFailure, truncated: [] };
    if (attempt.rateLimited) {
      return { document: null, title: "", links: [], error: `rate limited: HTTP ${attempt.rateLimited.status}`, truncated: [], rateLimited: attempt.rateLimited };
    }
    const truncated = [...attempt.truncated];
    if (truncated.length && !lastAttempt) {
      return { document: null, title: "", links: [], error: `truncated: ${truncated.join(" ")}`, truncated: [] };
    }
    const behaviorLinks = result.document && !result.error ? this.pageBehaviorLinks(tab) : [];
    return { ...result, truncated: result.document ? truncated : [], behaviors: this.behaviorOutcome, behaviorLinks, capture: "browser", documentWacz: attempt.documentWacz.get(url) ?? null, captured: attempt.captured };
  }

  private async loadPage(tab: Page, capture: PageCapture, attempt: PageAttempt, pageUrl: string, timings: PageTimings): Promise<Omit<PageLoadResult, "truncated">> {
    // The browser requests the URL without its fragment (--allowHashUrls pages): that is the document.
    const url = withoutHash(pageUrl);
    let navigationError: string | null = null;
    try {
      // From /p#a, going to /p#b would only scroll: the page would not load, nothing would be captured.
      await timings.time("load", async () => {
        if (url !== pageUrl && withoutHash(tab.url()) === url) await tab.goto("about:blank", { timeout: this.options.pageLoadTimeoutMs });
        await tab.goto(pageUrl, { waitUntil: [...(this.options.waitUntil ?? ["load"])], timeout: this.options.pageLoadTimeoutMs });
      });
    } catch (err) {
      navigationError = this.options.context.socketGate.failureExplained(errorMessage(err), url);
    }
    if (attempt.rateLimited || attempt.loggedOut) return { document: null, title: "", links: [], error: navigationError };
    if (attempt.duplicate) {
      // Archived already (--dedupePagesMinDepth): its revisit is written; no wait, behaviors or links.
      await this.endPage(capture, attempt, timings);
      const document = findDocument(attempt.captured, url, attempt.internalRedirects);
      return document && !isLost(attempt, document.url) ? { document, title: "", links: [], error: null, duplicate: true } : { document: null, title: "", links: [], error: "the page's document could not be stored" };
    }
    // Only rendered documents load more after "load"; a PDF viewer never goes quiet, so don't wait on it.
    const rendered = findDocument(attempt.captured, url, attempt.internalRedirects);
    if ((!navigationError || /timeout/i.test(navigationError)) && (!rendered || isRenderedDocumentType(rendered.mime))) {
      // Behaviors to follow end with a wait for the network to stay quiet (afterLoad): here, only let the
      // requests in flight end, or the page would wait out the quiet time twice.
      const quietAfter = this.options.behaviors.enabled.length && rendered && isRenderedDocumentType(rendered.mime) ? QUIET_BEFORE_BEHAVIORS_MS : undefined;
      await timings.time("netIdleAfterLoad", () => capture.network.waitForQuiet(this.options.netIdleWaitMs, this.options.netIdleMaxRequests, quietAfter));
      // Only a page that shows a document has anything to act on.
      const shown = findDocument(attempt.captured, url, attempt.internalRedirects);
      if (shown && isRenderedDocumentType(shown.mime)) {
        await this.afterLoad(tab, capture, attempt, url, timings);
        // The page's document waits for its storage (--saveStorage), as it is after the behaviors.
        if (attempt.storageGate) await timings.time("saveStorage", () => capture.saveStorage(tab.url()));
      }
    }
    // Read while the page runs (text, screenshots may fetch more), once what is in flight has reached it.
    await timings.time("drain", () => this.settle(capture));
    const shown = findDocument(attempt.captured, url, attempt.internalRedirects);
    const read = shown && isRenderedDocumentType(shown.mime) && (!navigationError || /timeout/i.test(navigationError)) ? await this.readLoadedPage(tab, url, shown.status, timings) : null;
    if (read && !(read instanceof Error)) capture.fetchMissingMedia(read.media);
    await this.endPage(capture, attempt, timings);

    let document = findDocument(attempt.captured, url, attempt.internalRedirects);
    if (!document && navigationError) {
      // The browser would not render it (a download, say): fetch the page URL directly instead, within
      // the page's own time allowance (a server that never answers must not hold the attempt longer).
      document = await capture.fetchPageDirectly(url, this.options.pageLoadTimeoutMs, navigationError);
      if (!document) return { document: null, title: "", links: [], error: navigationError };
    }
    if (!document) return { document: null, title: "", links: [], error: navigationError ?? "no document captured" };
    if (isLost(attempt, url) || isLost(attempt, document.url)) {
      // Counting the page done would leave it out of the archive for good: retry it.
      return { document: null, title: "", links: [], error: "the page's document could not be stored" };
    }
    // Not rendered (PDF, image, download): archived as it is, no links. (We abort its navigation ourselves.)
    if (!isRenderedDocumentType(document.mime)) return { document, title: "", links: [], error: null };
    if (navigationError && !/timeout/i.test(navigationError)) {
      // The document arrived but the page broke (browser crash, tab closed): retry rather than lose its links.
      return { document: null, title: "", links: [], error: navigationError };
    }
    if (!read || read instanceof Error) {
      // Without its links the crawl would silently lose everything below this page: retry it instead.
      return { document: null, title: "", links: [], error: `could not read the page's links: ${read ? read.message : "the page was not read"}` };
    }
    return { document, title: read.title, ...(read.favicon ? { favicon: read.favicon } : {}), links: read.links, ...(read.extracts ? { extracts: read.extracts } : {}), ...(read.queriedSelectors ? { queriedSelectors: read.queriedSelectors } : {}), error: null };
  }

  /**
   * What was in flight reaches the page. A body that reached it only now (one the capture streamed, then handed on)
   * may make its script ask for more (an image it adds): those requests are let end and drained too, a few rounds at most.
   */
  private async settle(capture: PageCapture): Promise<void> {
    const quietBy = Date.now() + this.options.netIdleWaitMs; // one idle wait's cap for all rounds: a long poll holds no more
    for (let round = 0; round < SETTLE_ROUNDS; round++) {
      const started = Date.now();
      await capture.settle();
      if (!capture.network.startedSince(started) || Date.now() >= quietBy) return;
      await capture.network.waitForQuiet(quietBy - Date.now(), this.options.netIdleMaxRequests, 0);
    }
  }

  /** The page's title, links, text and screenshots, once it is loaded and its behaviors are over. */
  private async readLoadedPage(tab: Page, url: string, status: number, timings: PageTimings): Promise<(Pick<PageLoadResult, "title" | "favicon" | "links" | "extracts" | "queriedSelectors"> & { media: string[] }) | Error> {
    try {
      const queried = this.options.watchQueries ? await timings.time("links", () => queriedSelectors(tab)) : null;
      const { title, links, media } = await timings.time("links", () => this.readPage(tab));
      const favicon = await timings.time("links", () => pageFavicon(tab));
      const extracts = await timings.time("extracts", () => this.takeExtracts(tab, url, status));
      return { title, ...(favicon ? { favicon } : {}), links, media, ...(extracts ? { extracts } : {}), ...(queried ? { queriedSelectors: queried } : {}) };
    } catch (err) {
      return new Error(errorMessage(err));
    }
  }

  /** The page is done: nothing more of it is captured; what it cut off goes into its timings line. */
  private async endPage(capture: PageCapture, attempt: PageAttempt, timings: PageTimings): Promise<void> {
    timings.cutAtEnd = await timings.time("drain", () => capture.endPage());
    if (timings.cutAtEnd.refused || timings.cutAtEnd.unfinished) logger.debug("capture", "the page's end cut off its later requests", { url: attempt.pageUrl, ...timings.cutAtEnd });
  }

  /** Text and screenshots after the load wait; what they make the page load is captured with it. */
  private async takeExtracts(tab: Page, url: string, status: number): Promise<PageExtracts | undefined> {
    const wanted = this.options.extracts;
    // A 304 page shows nothing: the browser got no body to render.
    if (!wanted || status === 304 || (!wanted.text && !wanted.screenshots.length)) return undefined;
    return takePageExtracts(tab, wanted, url);
  }

  /** --postLoadDelay, then the behaviors; the page is done once the network is quiet again. */
  private async afterLoad(tab: Page, capture: PageCapture, attempt: PageAttempt, url: string, timings: PageTimings): Promise<void> {
    const { enabled, timeoutMs, postLoadDelayMs } = this.options.behaviors;
    if (postLoadDelayMs > 0) await timings.time("postLoadDelay", () => new Promise((resolve) => setTimeout(resolve, postLoadDelayMs)));
    if (!enabled.length) return;
    // A click that would leave the page is refused while the behaviors run (see DialogGuard).
    if (this.dialogs) this.dialogs.blockUnload = true;
    try {
      this.behaviorOutcome = (await timings.time("behaviors", () => runBehaviors(tab, url, timeoutMs, attempt.answers))) ?? undefined;
      timings.behaviors = this.behaviorOutcome?.eachMs ?? {};
    } finally {
      if (this.dialogs) this.dialogs.blockUnload = false;
    }
    // A page the behaviors left settled (behaviors/behaviors.ts BehaviorOutcome.settled) has nothing more coming
    // to watch for: only what is in flight is let end, as before the behaviors.
    const quietMs = this.behaviorOutcome?.settled ? QUIET_AFTER_SETTLED_MS : undefined;
    await timings.time("netIdleAfterBehaviors", () => capture.network.waitForQuiet(this.options.netIdleWaitMs, this.options.netIdleMaxRequests, quietMs));
  }

  private async readPage(tab: Page): Promise<{ title: string; links: string[]; media: string[] }> {
    const read = await readPage(tab, this.options.linkSelectors ?? DEFAULT_LINK_SELECTORS, this.options.linkKinds);
    // Fragments kept: whether they tell pages apart is the seed scope's call (--allowHashUrls).
    const links = pageLinkUrls(read.links);
    return { ...read, links };
  }

  /** The behaviors' links, absolute (a behavior may give a relative one) and normalized as the page's links. */
  private pageBehaviorLinks(tab: Page): string[] {
    const base = tab.url();
    return pageLinkUrls(this.behaviorLinks, base);
  }

  /** The fetcher of what is captured outside the browser, under the run's connection rules (a hybrid crawl's static pages too). */
  get outsideFetcher(): FallbackFetcher {
    return this.fetcher;
  }

  /** The Cookie header the worker's browser would send to `url` (its profile's cookie jar), or null when it has none for it. */
  async cookieHeader(url: string): Promise<string | null> {
    const { tab } = await this.ensureTab();
    const cookies = await tab.cookies(url);
    return cookies.length ? cookies.map((c) => `${c.name}=${c.value}`).join("; ") : null;
  }

  /** The page is settled for good (crawled, skipped, failed for the last time): what its attempts stored is forgotten. */
  forgetAttempts(url: string): void {
    this.options.earlierAttempts?.forget(url);
  }

  /** Close the tab (after a failure, crash or hang a fresh one is opened for the next page). */
  async reset(): Promise<void> {
    const tab = this.tab;
    const capture = this.capture;
    const popups = this.popups;
    if (tab) this.options.tabWatch?.tabClosed();
    this.tab = null;
    this.capture = null;
    this.popups = null;
    this.dialogs = null;
    this.contentCheck = null;
    await bounded(popups?.detach(), TAB_CLOSE_DEADLINE_MS, "popup watch did not detach", { worker: this.id });
    // An ended page's scripts would run again, unheld, once the capture's session lets go of the tab (a poll
    // reached its server as the crawl ended, also after going to about:blank first): its tab closes first, its
    // drain already done. Chromium may never confirm closing a tab that shows an error page (puppeteer's close()
    // then waits forever): the close command is sent either way, so move on after a deadline.
    const ended = capture?.scripts.stopped === true;
    if (ended) await bounded(tab?.close(), TAB_CLOSE_DEADLINE_MS, "tab did not confirm closing", { worker: this.id });
    await bounded(capture?.detach(), CAPTURE_DRAIN_DEADLINE_MS, "capture of the old tab did not drain", { worker: this.id });
    if (!ended) await bounded(tab?.close(), TAB_CLOSE_DEADLINE_MS, "tab did not confirm closing", { worker: this.id });
  }

  async close(): Promise<void> {
    // Resetting drains the capture (within its deadline) before the tab closes.
    await this.reset();
  }
}

const TAB_CLOSE_DEADLINE_MS = 5000;
/**
 * How long the network must have been quiet after the load before behaviors start: none, they start once
 * no request is in flight. The wait after them asks for the full quiet time (capture/networkActivity.ts), and what the
 * page fetches meanwhile is captured all the same (the behaviors' own autofetch watches the page for new
 * images as it changes).
 */
const QUIET_BEFORE_BEHAVIORS_MS = 0;
/** How many times a page's drain is begun again for requests its page started while it ran. */
const SETTLE_ROUNDS = 3;
/** How long the network must have been quiet after behaviors that left the page settled: none. */
const QUIET_AFTER_SETTLED_MS = 0;
/** Most behavior links kept per page (a behavior adding links in a loop must not fill memory). */
const MAX_BEHAVIOR_LINKS = 10_000;
const CAPTURE_DRAIN_DEADLINE_MS = 30_000;

/** Wait for a cleanup step, but never longer than `ms`; failures and timeouts are logged, not thrown. */
async function bounded(step: Promise<unknown> | undefined, ms: number, whatTimedOut: string, details: Record<string, unknown>): Promise<void> {
  if (!step) return;
  await withTimeout(step, ms, `${whatTimedOut} within ${ms / 1000}s`).catch((err: unknown) => logger.debug("browser", errorMessage(err), details));
}

/** The URL's exchange could not be stored, or was not stored yet when the page's drain deadline passed. */
function isLost(attempt: PageAttempt, url: string): boolean {
  return attempt.lost.has(url) || attempt.unfinished.has(url);
}

/** The windows a loaded page opened (none stays open) count as its links: their URLs are followed if in scope. */
function withPopupLinks(result: Omit<PageLoadResult, "truncated">, popups: PopupCloser, url: string): Omit<PageLoadResult, "truncated"> {
  const opened = popups.opened();
  if (!opened.urls.length && !opened.closed) return result;
  logger.info("browser", "the page opened windows: none left open, their URLs taken as links", { url, windows: opened.urls.length, closed: opened.closed });
  if (!result.document || result.error) return result;
  const links = opened.urls.map((u) => tryNormalizeCrawlUrl(u)).filter((u): u is string => u !== null);
  return { ...result, links: [...new Set([...result.links, ...links])] };
}

/**
 * Follow the page URL through captured redirects, and those the browser made by itself (`internalRedirects`:
 * HTTPS Upgrades, HSTS), to the document that was finally rendered.
 */
export function findDocument(captured: CapturedSummary[], url: string, internalRedirects: ReadonlyMap<string, string> = new Map()): CapturedSummary | null {
  let current = url;
  const visited = new Set<string>();
  for (;;) {
    const hop = captured.find((c) => c.url === current && (c.resourceType === "Document" || c.resourceType === "Direct"));
    const internal = hop ? undefined : internalRedirects.get(current);
    if (internal !== undefined && !visited.has(current)) {
      visited.add(current);
      current = internal;
      continue;
    }
    if (!hop) return null;
    if (!(hop.status >= 300 && hop.status < 400 && hop.location) || visited.has(current)) return hop;
    visited.add(current);
    const next = tryNormalizeCrawlUrl(hop.location, current);
    if (!next) return hop;
    current = next;
  }
}
