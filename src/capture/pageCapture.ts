import { STATUS_CODES } from "node:http";
import type { CDPSession, Page, Protocol } from "puppeteer-core";
import { bodySize, headerValue, shortOfDeclaredLength, wholeByDeclaredLength, type ConfirmedCapture, type Exchange, type ExchangeBody, type TruncationReason } from "../archive/exchange.js";
import { noteCutShort, type BodyLimits } from "../fetch/bodyLimits.js";
import { discardBody, type FallbackFetcher } from "../fetch/fallbackFetcher.js";
import { errorMessage, logger } from "../log/logger.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";
import { tryNormalizeCrawlUrl } from "../scope/urls.js";
import { withTimeout } from "../util/deadline.js";
import { testSeams } from "../util/testSeams.js";
import { internalRedirectReason, isBrowserInternal, networkIdOf } from "./browserInternal.js";
import { watchCacheHits } from "./cacheHits.js";
import { DEFAULT_TAB_CAPTURE, type TabCaptureOptions } from "./captureRules.js";
import { OriginRedirects } from "./requests/originOverride.js";
import { readPageStorage } from "./pageStorage.js";
import { detectedContentType } from "./detectedType.js";
import { isLoginPage, rateLimitRuleMatched } from "./pageAnswers.js";
import { isRenderedDocumentType } from "./documentTypes.js";
import { NetworkActivity } from "./networkActivity.js";
import { LiveStreams } from "./bodies/streamingBody.js";
import { ExchangeWork } from "./exchangeWork.js";
import { FallbackCaptures } from "./fallbackCaptures.js";
import { DocumentLifetimes } from "./documentLifetimes.js";
import { LoadOutcomes } from "./loadOutcomes.js";
import { END_DRAIN_DEADLINE_MS, PageAttempt, sentRequestsArrived, type CapturedSummary, type ConditionalRequest, type CutAtEnd } from "./pageAttempt.js";
import { PageScripts, QUIET_AT_END_MS } from "./pageScripts.js";
import { refuseByAddress } from "./requests/addressCheck.js";
import { answerFromStored, type PageStores } from "./requests/earlierAttempts.js";
import { answerProxyChallenges, failRelayAnswer } from "./requests/proxyAuth.js";
import { AdaptiveStreams, type ManifestAnswer } from "./adaptiveStreams.js";
import { TabBlocking } from "./requests/requestBlocking.js";
import { bodyReading, CUT_OFF_ERRORS, readRequestBody, readResponseBody, streamResponseBody, type StreamControl } from "./bodies/responseBody.js";
import { SocketRecorder } from "./webSockets.js"; // WebSockets

export { PageAttempt, type CapturedSummary, type ConditionalRequest, type CutAtEnd, type RateLimitAnswer } from "./pageAttempt.js";

/** How long asking the sink whether a page can still be listed in a WACZ may take. */
const LISTABLE_DEADLINE_MS = 5000;

/** How long a request paused while an ended page still shows waits for the browser to tell whose it is. */
const WHOSE_REQUEST_WAIT_MS = 500;

/** A page's drain this long is logged (debug) with what it waited for. */
const SLOW_DRAIN_MS = 2000;

/**
 * Captures every HTTP exchange of one browser tab through the CDP Fetch domain at the response stage:
 * the browser pauses each response, we read its body, hand the exchange to the sink (the capture
 * pipeline) and let the response continue. What the browser cannot hand over whole (a 206 fragment, a
 * revalidated cached copy, a body it lost) is fetched outside the browser and handed to the same sink.
 */
export class PageCapture {
  /** Exchanges being captured, work in the background: what a page's end drains. */
  private readonly work = new ExchangeWork();
  private attempt = new PageAttempt(false);
  /** Conditional headers to add to the next document request for a URL (--refresh). */
  private readonly conditional = new Map<string, ConditionalRequest>();
  /** Document requests we really made conditional, by request id: only their 304s mean "not modified". */
  private readonly sentConditional = new Map<string, ConfirmedCapture>();
  /** The tab's documents: which request is whose, and which are gone. */
  private readonly lifetimes = new DocumentLifetimes();
  private readonly loads = new LoadOutcomes(this.lifetimes);

  /** The tab's requests in flight, for the network-idle wait. */
  readonly network: NetworkActivity;
  private readonly live: LiveStreams;
  /** The tab's scripts, stopped at a page's end (pageScripts.ts). */
  readonly scripts: PageScripts;
  /** What the browser cannot hand over whole, fetched outside it. */
  private readonly fallbacks: FallbackCaptures;
  private readonly streams: AdaptiveStreams; // HLS and DASH: one rendition served and stored, all its files fetched
  private readonly redirects: OriginRedirects;
  /** --blockRules, --blockAds (requestBlocking.ts); null when nothing is blocked. */
  private blocking: TabBlocking | null = null;
  private sockets: SocketRecorder | null = null; // WebSockets: their frames, written at close or at the page's end

  private constructor(
    private readonly cdp: CDPSession,
    private readonly sink: ExchangeSink,
    private readonly fetcher: FallbackFetcher,
    private readonly limits: BodyLimits,
    private readonly mainFrameId: string,
    private readonly rateLimitStatusCodes: readonly number[],
    private readonly tabCapture: TabCaptureOptions,
  ) {
    this.redirects = new OriginRedirects(tabCapture.originOverride);
    this.network = new NetworkActivity(cdp, this.lifetimes);
    this.live = new LiveStreams(cdp);
    this.scripts = new PageScripts(cdp);
    this.fallbacks = new FallbackCaptures(sink, fetcher, this.work, (exchange, attempt, failure) => this.storeFetched(exchange, attempt, failure));
    this.streams = new AdaptiveStreams(cdp, sink, fetcher, this.work, (exchange, attempt, failure) => this.storeFetched(exchange, attempt, failure), limits);
  }

  static async attach(page: Page, sink: ExchangeSink, fetcher: FallbackFetcher, limits: BodyLimits, rateLimitStatusCodes: readonly number[] = [], tabCapture = DEFAULT_TAB_CAPTURE): Promise<PageCapture> {
    const cdp = await page.createCDPSession();
    const { frameTree } = await cdp.send("Page.getFrameTree");
    await cdp.send("Page.enable"); // frames taken down and documents replaced end their requests (documentLifetimes.ts)
    return PageCapture.listen(new PageCapture(cdp, sink, fetcher, limits, frameTree.frame.id, rateLimitStatusCodes, tabCapture));
  }

  /**
   * A service worker's own requests (--serviceWorker enabled; serviceWorkers.ts): stored as they come,
   * not as part of any page (no page document, no retry: cut-off bodies are stored marked truncated).
   */
  static async attachWorker(cdp: CDPSession, sink: ExchangeSink, fetcher: FallbackFetcher, limits: BodyLimits, tabCapture: TabCaptureOptions): Promise<PageCapture> {
    const capture = new PageCapture(cdp, sink, fetcher, limits, "", [], { ...tabCapture, rateLimitOnMatch: [], saveStorage: false });
    capture.attempt = new PageAttempt(true);
    return PageCapture.listen(capture);
  }

  private static async listen(capture: PageCapture): Promise<PageCapture> {
    const { cdp, tabCapture } = capture;
    cdp.on("Fetch.requestPaused", (event: Protocol.Fetch.RequestPausedEvent) => {
      const attempt = capture.attempt;
      const networkId = networkIdOf(event);
      if (networkId !== null && (event.responseStatusCode !== undefined || event.responseErrorReason)) attempt.left(networkId);
      if (attempt.ended) return capture.refuseAfterEnd(event, attempt);
      const work = capture.onPaused(event, attempt).catch((err: unknown) => {
        attempt.lost.add(event.request.url);
        logger.warn("capture", "exchange not captured", { url: event.request.url, error: errorMessage(err) });
      });
      capture.work.exchange(work, event.request.url);
    });
    capture.sockets = new SocketRecorder(cdp, capture.sink); // WebSockets
    capture.loads.listen(cdp);
    cdp.on("Network.loadingFailed", (event: Protocol.Network.LoadingFailedEvent) => {
      capture.attempt.stillInBrowser.delete(event.requestId);
      capture.attempt.dropped.drop(event.requestId, event.errorText);
    });
    capture.lifetimes.listen(cdp);
    capture.lifetimes.onGone(() => capture.attempt.documentsGone((networkId, frameId) => capture.lifetimes.requestGone(networkId, frameId)));
    cdp.on("Network.requestWillBeSent", (event: Protocol.Network.RequestWillBeSentEvent) => capture.noteInternalRedirect(event));
    cdp.on("Network.requestWillBeSentExtraInfo", (event: Protocol.Network.RequestWillBeSentExtraInfoEvent) => capture.attempt.left(event.requestId));
    // An answer the HTTP cache gave after the request was sent on never pauses at the response stage.
    cdp.on("Network.responseReceived", (event: Protocol.Network.ResponseReceivedEvent) => capture.attempt.left(event.requestId));
    await cdp.send("Network.enable");
    // Requests answered by a site's service worker never reach the network stage we capture (--serviceWorker).
    if (tabCapture.bypassServiceWorker) await cdp.send("Network.setBypassServiceWorker", { bypass: true });
    watchCacheHits(cdp, () => capture.attempt, capture.fallbacks); // the HTTP cache stays on: its hits never pause here
    capture.blocking = await TabBlocking.start(capture.fetcher.rules.blocking, cdp, capture.mainFrameId);
    await cdp.send("Fetch.enable", {
      handleAuthRequests: answerProxyChallenges(cdp),
      patterns: [
        // Every request (each redirect hop too) pauses before it is sent, for the address policy; documents
        // also so that a refresh can make them conditional.
        { urlPattern: "*", requestStage: "Request" },
        { urlPattern: "*", requestStage: "Response" },
      ],
    });
    return capture;
  }

  /**
   * Start capturing a new attempt at a page (with --refresh, its document request made conditional). `stores`: where
   * the page's attempts stored what they fetched, this one's added; on a retry (`answersFromStores`) those requests are
   * answered from the archive, not sent again.
   */
  beginPage(url: string, options: { conditional?: ConditionalRequest; lastAttempt: boolean; skipIfArchived?: boolean; sink?: ExchangeSink; stores?: PageStores | null; answersFromStores?: boolean }): PageAttempt {
    this.attempt.endStreams();
    const sink = options.sink ?? this.sink;
    this.sockets?.beginPage(url, sink); // WebSockets
    this.streams.beginPage();
    this.attempt = new PageAttempt(options.lastAttempt, url, this.tabCapture.saveStorage);
    this.attempt.skipIfArchived = options.skipIfArchived ?? false;
    this.attempt.sink = sink;
    this.attempt.stores = options.stores ?? null;
    this.attempt.answersFromStores = (options.answersFromStores ?? false) && this.attempt.stores !== null && this.attempt.stores.size > 0;
    this.network.reset();
    this.conditional.clear();
    if (options.conditional) this.conditional.set(url, options.conditional);
    return this.attempt;
  }

  /** The page is done but still read: open streams cut once idle, what is in flight now reaches it first. */
  async settle(deadlineMs = drainDeadlineMs()): Promise<void> {
    this.attempt.endStreams();
    const started = Date.now();
    const underWay = this.work.underWay();
    await this.work.settleCurrent(deadlineMs);
    this.noteSlowDrain(started, underWay, "before the page is read");
  }

  /** A drain that took long, logged (debug) with what it waited for. */
  private noteSlowDrain(started: number, underWay: { urls: string[]; background: number }, when: string): void {
    const ms = Date.now() - started;
    if (ms < SLOW_DRAIN_MS) return;
    logger.debug("capture", `the page's drain ${when} was slow`, { page: this.attempt.pageUrl, ms, exchanges: underWay.urls.length, urls: underWay.urls.slice(0, 5), background: underWay.background });
  }

  /**
   * The page is done (its load, behaviors and quiet wait are over): nothing more of it is captured. What it
   * requests from now on is refused, open body streams are cut once idle, and what is already in flight has
   * one deadline to be stored (what did not make it is in the attempt: unfinished, not in the archive yet).
   * Then its scripts are stopped: a page that polls or ticks starts nothing new, no behavior of it runs on.
   * (Stopped first, the browser would hold back the ends of loads already in flight.)
   */
  async endPage(deadlineMs = drainDeadlineMs()): Promise<CutAtEnd> {
    const attempt = this.attempt;
    attempt.ended = true;
    attempt.endStreams();
    const drainStarted = Date.now();
    await sentRequestsArrived(attempt); // what was sent just before reaches its server before the page is done
    if (this.sockets) this.work.background(this.sockets.endPage()); // WebSockets: written with the frames seen so far
    const underWay = this.work.underWay();
    const unfinished = await this.work.settle(deadlineMs);
    attempt.drained = true;
    this.noteSlowDrain(drainStarted, underWay, "at its end");
    if (unfinished.length) {
      for (const url of unfinished) attempt.unfinished.add(url);
      attempt.cutAtEnd.unfinished = unfinished.length;
      logger.warn("capture", "exchanges still being stored when the page's drain deadline passed", { page: attempt.pageUrl, urls: unfinished.slice(0, 10), count: unfinished.length });
    }
    this.streams.report(attempt);
    await this.scripts.stop(this.network.quietFor(QUIET_AT_END_MS) && attempt.cutAtEnd.refused === 0);
    this.lifetimes.endDocument();
    return attempt.cutAtEnd;
  }

  /**
   * The browser sent the page's document elsewhere by itself (HTTPS Upgrades, HSTS). Such a redirect may never
   * pause in the Fetch domain, so only the Network domain tells where the page's document went.
   */
  private noteInternalRedirect(event: Protocol.Network.RequestWillBeSentEvent): void {
    const redirect = event.redirectResponse;
    if (!redirect || event.type !== "Document" || event.frameId !== this.mainFrameId) return;
    const reason = internalRedirectReason(redirect.headers);
    if (reason === null) return;
    logger.debug("capture", "the browser redirected the page by itself: followed, not stored", { url: redirect.url, to: event.request.url, reason });
    this.attempt.noteInternalRedirect(redirect.url, event.request.url);
  }

  /** A request (or the answer to one) of a page that is done: not captured, not sent on. */
  private refuseAfterEnd(event: Protocol.Fetch.RequestPausedEvent, attempt: PageAttempt): void {
    attempt.cutAtEnd.refused += 1;
    void this.cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason: "Aborted" }).catch(() => undefined);
  }

  /**
   * A request of an ended page's document, made after the next page began: it shows until that page replaces it,
   * and its scripts run again by then (a timer due in that moment). It belongs to neither page: not sent.
   */
  private async fromEndedDocument(event: Protocol.Fetch.RequestPausedEvent): Promise<boolean> {
    const networkId = networkIdOf(event);
    if (networkId === null || (event.resourceType === "Document" && event.frameId === this.mainFrameId)) return false; // the next page itself
    if (!(await this.lifetimes.madeByEndedDocument(networkId, WHOSE_REQUEST_WAIT_MS))) return false;
    logger.debug("capture", "request of an ended page's document refused", { url: event.request.url });
    await this.cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason: "Aborted" }).catch(() => undefined);
    return true;
  }

  /**
   * Media files the page shows but the browser has not asked for (yet): fetched whole outside the browser, as
   * after a 206, so the archive holds them whatever the player would have done. Part of the page's drain.
   */
  fetchMissingMedia(urls: readonly string[]): void {
    const attempt = this.attempt;
    const requested = new Set(attempt.captured.map((c) => c.url));
    for (const url of urls) if (!requested.has(url)) this.fallbacks.afterPartialContent(url, [], attempt);
  }

  /** --saveStorage: the loaded page's storage goes with its document (held until now), for the origin `url` shows. */
  async saveStorage(url: string): Promise<void> {
    const gate = this.attempt.storageGate;
    if (gate) gate.done(await readPageStorage(this.cdp, url));
  }

  /** The tab is closing: what is under way is stored (its caller bounds the wait), open sockets too. */
  async detach(): Promise<void> {
    await this.sockets?.endPage(); // WebSockets
    this.attempt.endStreams();
    await this.work.all();
    await this.cdp.detach().catch(() => undefined);
  }

  /** The page URL fetched outside the browser (it would not render it, a download say); null if that failed too. */
  fetchPageDirectly(url: string, timeoutMs: number, navigationError: string): Promise<CapturedSummary | null> {
    return this.fallbacks.page(url, timeoutMs, navigationError, this.attempt, this.rateLimitStatusCodes);
  }

  private async onPaused(event: Protocol.Fetch.RequestPausedEvent, attempt: PageAttempt): Promise<void> {
    const { requestId, request } = event;
    this.redirects.restore(event);
    if (event.responseStatusCode === undefined && !event.responseErrorReason) return this.onRequestStage(event);
    const status = event.responseStatusCode;
    const protocol = new URL(request.url).protocol;
    if (status === undefined || event.responseErrorReason || (protocol !== "http:" && protocol !== "https:") || isBrowserInternal(event)) {
      await this.continue(requestId);
      return;
    }
    if (await this.blocking?.atResponse(event, attempt.pageUrl || null, attempt.dropped)) return;
    if (await failRelayAnswer(this.cdp, event, event.resourceType === "Document" && event.frameId === this.mainFrameId ? attempt : null)) return;
    const responseHeaders = (event.responseHeaders ?? []).map(({ name, value }) => [name, value] as [string, string]);
    const requestHeaders = Object.entries(request.headers).map(([n, v]) => [n, String(v)] as [string, string]);
    const confirms = status === 304 ? this.sentConditional.get(event.networkId ?? requestId) : undefined;
    this.sentConditional.delete(event.networkId ?? requestId);
    const date = new Date();
    const location = responseHeaders.find(([n]) => n.toLowerCase() === "location")?.[1] ?? null;
    const mime = (responseHeaders.find(([n]) => n.toLowerCase() === "content-type")?.[1] ?? "").split(";")[0].trim();
    const pageDocument = event.resourceType === "Document" && event.frameId === this.mainFrameId;
    const ownDocument = pageDocument && attempt.notePageDocument(request.url, status, location);
    if (ownDocument && this.rateLimitStatusCodes.includes(status)) {
      // "Too many requests" is not the page: a replay of it would be wrong. Nothing of this attempt
      // is stored (the browser is stopped from rendering it); the page is tried again later.
      attempt.rateLimited = { url: request.url, status, retryAfter: headerValue(responseHeaders, "retry-after") ?? null };
      await this.cdp.send("Fetch.failRequest", { requestId, errorReason: "BlockedByResponse" }).catch(() => undefined);
      return;
    }
    const loginUrl = this.tabCapture.loginUrl;
    const loginPage = ownDocument && location && loginUrl ? tryNormalizeCrawlUrl(location, request.url) : null;
    if (loginPage && loginUrl && isLoginPage(loginPage, loginUrl) && !isLoginPage(request.url, loginUrl)) {
      // Sent to the login page: the profile's session is gone. The login form is not this page's content.
      attempt.loggedOut = { url: request.url, loginPage };
      await this.cdp.send("Fetch.failRequest", { requestId, errorReason: "BlockedByResponse" }).catch(() => undefined);
      return;
    }

    if (status === 304 && !confirms) {
      // The browser revalidated a copy from its own cache: the 304 is not the resource, the cached
      // response it renders is. That one must be in the archive as itself.
      await this.continue(requestId);
      const full = await this.fallbacks.afterRevalidation(request.url, requestHeaders, pageDocument, attempt);
      attempt.captured.push({ url: request.url, status: full?.status ?? 200, mime: full?.mime ?? mime, resourceType: event.resourceType, location, date });
      return;
    }
    attempt.captured.push({ url: request.url, status, mime, resourceType: event.resourceType, location, date });

    if (status === 206) {
      await this.continue(requestId);
      this.fallbacks.afterPartialContent(request.url, requestHeaders, attempt);
      return;
    }

    // A page URL that is not a rendered document (PDF, image, download): archive it, but do not let the
    // browser open a viewer or a download for it (a PDF viewer keeps fetching things of its own).
    const archiveOnly = pageDocument && status >= 200 && status < 300 && !isRenderedDocumentType(mime);
    let body: ExchangeBody;
    let cutOff = false;
    let cutShort: "length" | "time" | null = null;
    let manifest: ManifestAnswer | null = null; // an HLS or DASH manifest cut to one rendition
    // Bodies the browser never hands over (a redirect's, 204, 304, HEAD): stored empty, not "short".
    const bodiless = (status >= 300 && status < 400 && location) || status === 204 || status === 304 || request.method === "HEAD";
    const reading = bodyReading(responseHeaders, event.resourceType, request.url);
    if (bodiless) {
      body = { kind: "bytes", bytes: new Uint8Array(0) };
      await this.continue(requestId);
    } else if (reading !== "read") {
      const networkId = event.networkId ?? requestId;
      let started = false;
      const onChunk = () => {
        if (!started) this.network.streaming(networkId);
        started = true;
      };
      const declaredLength = responseHeaders.some(([n]) => n.toLowerCase() === "content-length");
      const control: StreamControl = { limits: this.limits, onChunk, cutoff: archiveOnly || declaredLength ? attempt.downloads : attempt.streams, decodeDirectly: this.fallbacks.directDecoder(request, requestHeaders, status, responseHeaders) };
      const streamed = (reading === "live" && !archiveOnly ? await this.live.read(event, control) : null)
        ?? (await streamResponseBody(this.cdp, event, responseHeaders, archiveOnly, control));
      body = streamed.body;
      // The page has the body only once it received it: what its script does with it is part of the page.
      if (streamed.handedOver) await this.loads.of(networkIdOf(event), event.frameId, { size: bodySize(body), whole: true });
      if (body.kind === "bytes") attempt.answers.note(request.url, event.resourceType, body.bytes);
      cutOff = streamed.end === "disconnect";
      cutShort = streamed.end === "length" || streamed.end === "time" ? streamed.end : null;
    } else {
      const read = await attempt.dropped.unlessDropped(networkIdOf(event), readResponseBody(this.cdp, requestId, request.url)).catch((err: unknown) => new Error(errorMessage(err)));
      if (read instanceof Error) {
        // Never an empty body in its place: that would claim the URL and keep its real body out for good.
        if (archiveOnly) await this.abort(requestId);
        else await this.continue(requestId);
        await this.fallbacks.bodyUnavailable(request, requestHeaders, status, read.message, attempt);
        return;
      }
      body = read;
      if (body.kind === "bytes") attempt.answers.note(request.url, event.resourceType, body.bytes);
      const matched = body.kind === "bytes" ? rateLimitRuleMatched(this.tabCapture.rateLimitOnMatch, mime, status, body.bytes) : null;
      if (matched) return this.rateLimitedByText(event, attempt, status, matched.regex, responseHeaders);
      manifest = body.kind === "bytes" && !archiveOnly ? await this.streams.answer(request.url, mime, body.bytes, requestHeaders, attempt) : null;
      if (archiveOnly) {
        await this.abort(requestId);
      } else if (ownDocument && attempt.skipIfArchived && (await this.sink.isArchivedPayload(read, status))) {
        // --dedupePagesMinDepth: archived already. Stored (a revisit), but not rendered: nothing more is fetched.
        attempt.duplicate = true;
        await this.cdp.send("Fetch.failRequest", { requestId, errorReason: "BlockedByResponse" }).catch(() => undefined);
      } else if (manifest) {
        await this.streams.serve(this.cdp, event, manifest); // the player gets the rendition the archive will hold
        body = { kind: "bytes", bytes: manifest.body };
      } else {
        // A connection that drops mid-body still hands over the part received; the browser's load fails.
        const size = bodySize(body);
        const outcome = this.loads.of(networkIdOf(event), event.frameId, { size, whole: wholeByDeclaredLength(responseHeaders, size, true) });
        await this.continue(requestId);
        const error = await outcome;
        cutOff = error !== null && CUT_OFF_ERRORS.test(error);
      }
    }
    const truncated: TruncationReason | null = cutShort ?? (cutOff || (!bodiless && shortOfDeclaredLength(responseHeaders, manifest?.originalBody.length ?? bodySize(body), true)) ? "disconnect" : null);
    if (cutShort) noteCutShort(this.limits, request.url, cutShort, bodySize(body));
    // The page's document, rendered: what the browser took it for (its whole body has arrived by now).
    const identified = ownDocument && !bodiless && !archiveOnly && !attempt.duplicate ? await detectedContentType(this.cdp, request.url) : null;

    await this.handOn({
      url: request.url,
      method: request.method,
      requestHeaders,
      postData: await readRequestBody(this.cdp, event),
      status,
      statusText: event.responseStatusText || STATUS_CODES[status] || "",
      ...(await this.loads.protocols.of(event, !bodiless && reading !== "read")), // WARC-Protocol: h2, tls/1.3...
      responseHeaders,
      body,
      bodyDecoded: true,
      date,
      resourceType: event.resourceType,
      confirms,
      ...(truncated ? { truncated } : {}),
      ...(ownDocument ? { pageDocument: true } : {}),
      ...(identified ? { identifiedPayloadType: identified } : {}),
      ...(manifest ? { jsonMetadata: manifest.jsonMetadata, originalBody: manifest.originalBody } : {}),
    }, attempt);
  }

  /**
   * Hand an exchange of the page to the sink. A body cut off mid-transfer by the network is stored only
   * on the page's last attempt: before that, the attempt fails and a retry may get it whole. A body cut
   * short on purpose (size cap, a never-ending stream) is stored on any attempt: a retry would do no better.
   */
  private async handOn(exchange: Exchange, attempt: PageAttempt): Promise<void> {
    if (attempt.rateLimited || attempt.loggedOut) return discardBody(exchange);
    const storage = exchange.pageDocument && !(exchange.status >= 300 && exchange.status < 400) ? await attempt.storageGate?.storage : null;
    if (storage) exchange.jsonMetadata = JSON.stringify({ storage });
    if (exchange.truncated === "disconnect") {
      attempt.truncated.add(exchange.url);
      if (!attempt.lastAttempt) {
        await discardBody(exchange);
        logger.debug("capture", "body cut off; not stored, the page will be retried", { url: exchange.url });
        return;
      }
    }
    const outcome = await (attempt.sink ?? this.sink).store(exchange);
    if (exchange.pageDocument) attempt.documentWacz.set(exchange.url, outcome.wacz);
    // A retry of the page answers this URL from its record instead of fetching it again: a whole payload as the browser got it.
    if (outcome.kind === "response" && exchange.method === "GET" && !exchange.truncated && !exchange.originalBody) {
      attempt.stores?.remember(exchange.url, exchange.status, { path: outcome.path, offset: outcome.record.offset, length: outcome.record.length, wacz: outcome.wacz, size: bodySize(exchange.body) });
    }
  }

  /** Hand on what a fallback fetched; false (and logged) when it could not be stored. */
  private async storeFetched(exchange: Exchange, attempt: PageAttempt, failure: string): Promise<boolean> {
    try {
      await this.handOn(exchange, attempt);
      return true;
    } catch (err) {
      logger.warn("capture", failure, { url: exchange.url, error: errorMessage(err) });
      return false;
    }
  }

  private async onRequestStage(event: Protocol.Fetch.RequestPausedEvent): Promise<void> {
    const target = this.redirects.target(event.request.url);
    if (await refuseByAddress(this.fetcher.rules.addresses, this.cdp, event, target ?? event.request.url)) return;
    if (await this.blocking?.atRequest(event, this.attempt.pageUrl || null)) return;
    if (this.attempt.ended) return this.refuseAfterEnd(event, this.attempt); // paused before the page's end: not sent
    if (await this.fromEndedDocument(event)) return;
    if (await this.answerFromEarlierAttempt(event, this.attempt)) return;
    const pending = event.resourceType === "Document" && event.frameId === this.mainFrameId ? this.conditional.get(event.request.url) : undefined;
    const networkId = networkIdOf(event);
    // The browser's own fetches never hold the page's end, nor a gone document's requests (no end of theirs is told).
    if (networkId !== null && !this.lifetimes.requestGone(networkId, event.frameId)) this.attempt.stillInBrowser.set(networkId, { frameId: event.frameId, url: event.request.url });
    const added = this.fetcher.rules.headers.for(target ?? event.request.url); // --header
    if (!pending && !target && !added.length) return this.continue(event.requestId);
    if (target) this.redirects.sent(event.requestId, event.request.url, target);
    if (pending) this.conditional.delete(event.request.url);
    if (pending) this.sentConditional.set(event.networkId ?? event.requestId, pending.confirms);
    // Chromium refuses a Host header here ("unsafe"): an overridden origin's server sees its own host.
    const headers = pending || added.length ? this.fetcher.rules.headers.with(target ?? event.request.url, Object.entries({ ...event.request.headers, ...pending?.headers })).map(([name, value]) => ({ name, value: String(value) })) : undefined;
    await this.cdp.send("Fetch.continueRequest", { requestId: event.requestId, ...(headers ? { headers } : {}), ...(target ? { url: target } : {}) }).catch(() => undefined);
  }

  /**
   * A retry: a request for what an earlier attempt of the page stored is answered from its record, not sent to the
   * server again, and listed as captured (it is in the archive already: nothing is written). The page's own document
   * too: the retry renders the document the archive holds, so what it loads is what replay will ask for (a fresh copy
   * could name other subresources, which would be fetched and stored beside a document that never asks for them).
   * Only while the WACZ holding that document can still list the page; otherwise it is fetched and stored again.
   */
  private async answerFromEarlierAttempt(event: Protocol.Fetch.RequestPausedEvent, attempt: PageAttempt): Promise<boolean> {
    const stored = attempt.answersFromStores ? attempt.stores?.answerFor(event.request) : null;
    if (!stored) return false;
    const { url } = event.request;
    const pageDocument = event.resourceType === "Document" && event.frameId === this.mainFrameId && attempt.isPageDocument(url);
    if (pageDocument && !(await withTimeout((attempt.sink ?? this.sink).canListPageIn(stored.wacz), LISTABLE_DEADLINE_MS, "WACZ check timed out").catch(() => false))) return false;
    const response = await answerFromStored(this.cdp, event, stored);
    if (!response) return false;
    const location = null; // a redirect is never answered from a record
    if (pageDocument && attempt.notePageDocument(url, response.status, location)) {
      attempt.documentWacz.set(url, stored.wacz);
      this.conditional.delete(url);
    }
    const mime = (headerValue(response.headers, "content-type") ?? "").split(";")[0]!.trim();
    const date = new Date(response.date);
    attempt.captured.push({ url, status: response.status, mime, resourceType: event.resourceType, location, date: Number.isNaN(date.getTime()) ? new Date() : date });
    logger.debug("capture", "answered from the record an earlier attempt of the page stored: not fetched again", { page: attempt.pageUrl, url, status: response.status });
    return true;
  }

  /** --rateLimitOnMatch: the page's text says "too many requests": nothing more of the attempt is stored, as for a rate-limit status. */
  private async rateLimitedByText(event: Protocol.Fetch.RequestPausedEvent, attempt: PageAttempt, status: number, rule: RegExp, headers: [string, string][]): Promise<void> {
    attempt.rateLimited ??= { url: event.request.url, status, retryAfter: headerValue(headers, "retry-after") ?? null };
    logger.debug("capture", "rate limited by --rateLimitOnMatch", { url: event.request.url, rule: String(rule) });
    await this.cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason: "BlockedByResponse" }).catch(() => undefined);
  }

  private async continue(requestId: string): Promise<void> {
    await this.cdp.send("Fetch.continueRequest", { requestId }).catch(() => undefined);
  }

  private async abort(requestId: string): Promise<void> {
    await this.cdp.send("Fetch.failRequest", { requestId, errorReason: "Aborted" }).catch(() => undefined);
  }
}

/** A page's drain deadline: END_DRAIN_DEADLINE_MS, shorter in a test that reaches past it (TestSeams.drainDeadlineMs). */
function drainDeadlineMs(): number {
  return testSeams().drainDeadlineMs() ?? END_DRAIN_DEADLINE_MS;
}
