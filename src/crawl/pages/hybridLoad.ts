import type { CapturedSummary } from "../../capture/pageCapture.js";
import type { EarlierAttempts } from "../../capture/requests/earlierAttempts.js";
import { bodySize } from "../../archive/exchange.js";
import { deriveFor, isVolatile } from "../../hybrid/templateLearning.js";
import type { TemplateBook } from "../../hybrid/templateBook.js";
import type { BrowsedObservation, CaptureChoice, VerifyTurn } from "../../hybrid/templateTypes.js";
import { errorMessage, logger } from "../../log/logger.js";
import type { LoadOptions, PageLoadResult, PageWorker } from "../../page/pageWorker.js";
import { discardDocument, documentSummary, StaticPageLoader, type StaticDocument, type StaticPageOptions } from "../../page/staticPage.js";
import type { ExchangeSink } from "../../pipeline/exchangeSink.js";
import type { CaptureEntry, CaptureReport } from "../../reports/captureReport.js";
import { pageLinkUrls, withoutHash } from "../../scope/urls.js";
import { PutBackDocuments } from "./putBackDocuments.js";

export interface HybridCaptureOptions {
  book: TemplateBook;
  report: CaptureReport;
  /** Where a browsed page's document, fetched first to read its template, is remembered: the browser renders it from its record. */
  earlierAttempts: EarlierAttempts;
  /** What each worker's static loader shares: the browser's identity, the rate-limit statuses. */
  loader: Omit<StaticPageOptions, "fetcher" | "cookieHeader" | "keepText">;
  /** --text: static pages' text is read from their parsed document. */
  text: boolean;
}

/** Of a page's links, those that would still bring the crawl a page. */
export type LinksNotYetFound = (links: string[]) => Promise<string[]>;

/** The page's template is being learned or verified (by this process or another): the page is put back for this long. */
export interface WaitForTemplate {
  waitMs: number;
}

/**
 * Resource types whose requests count in a template's learning and a verify page's comparison: what the page fetches
 * to show itself. Pings and reports (beacons, CSP reports), CORS preflights and sockets are no part of the page.
 */
const COUNTED_TYPES = new Set(["Document", "Stylesheet", "Image", "Media", "Font", "Script", "TextTrack", "XHR", "Fetch", "Manifest", "Other", "Prefetch"]);

/**
 * --captureMode hybrid: a page's document is fetched without the browser first, and its template (static/templateKey.ts)
 * read from it. The template book (hybrid/) says how to capture it: statically (the document, what it names and what the
 * template's browsed pages showed its scripts fetch), or in the browser (to learn the template, to verify it, or because
 * the guard refuses). A browsed page renders the document already fetched, from its record: the site is asked once.
 * A browsed page teaches its template what its scripts fetched; a verify page compares both ways and a miss sends its
 * template back to the browser.
 */
export class HybridCapture {
  private readonly loaders = new WeakMap<PageWorker, StaticPageLoader>();
  /** Pages put back to wait for their template keep their documents here for their retry. */
  private readonly putBack = new PutBackDocuments(discardDocument);

  constructor(private readonly options: HybridCaptureOptions) {}

  /** Drop the documents of pages put back that no retry in this process took (the page phase is over). */
  async close(): Promise<void> {
    await this.putBack.clear();
  }

  private loaderOf(worker: PageWorker): StaticPageLoader {
    let loader = this.loaders.get(worker);
    if (!loader) {
      loader = new StaticPageLoader({ ...this.options.loader, keepText: this.options.text, fetcher: worker.outsideFetcher, cookieHeader: (url) => worker.cookieHeader(url) });
      this.loaders.set(worker, loader);
    }
    return loader;
  }

  /**
   * The page loaded one way or the other, or the time to wait while another process learns its template.
   * `notYetFound`: of the page's links, those that would still bring the crawl a page (pageLinks.ts linksNotYetFound).
   */
  async load(worker: PageWorker, pageUrl: string, options: LoadOptions & { sink: ExchangeSink }, notYetFound: LinksNotYetFound = async (links) => links): Promise<PageLoadResult | WaitForTemplate> {
    const loader = this.loaderOf(worker);
    let doc: StaticDocument;
    try {
      doc = this.putBack.take(pageUrl) ?? (await loader.fetchDocument(pageUrl));
    } catch (err) {
      return this.browse(worker, pageUrl, options, null, { template: null, purpose: "not-a-template", reason: `its document was not fetched without the browser: ${errorMessage(err)}` });
    }
    if (!doc.parsed) {
      await loader.discard(doc);
      return this.browse(worker, pageUrl, options, null, { template: null, purpose: "not-a-template", reason: doc.notStatic ?? "not an HTML document" });
    }
    const template = doc.parsed.template.key;
    const scripts = doc.parsed.references.requisites.filter((r) => r.kind === "script").map((r) => r.url);
    let choice: CaptureChoice;
    try {
      choice = await this.options.book.choose(pageUrl, template, scripts, doc.parsed.selectorsHeld);
    } catch (err) {
      await loader.discard(doc);
      throw err;
    }
    if (choice.mode === "wait") {
      this.putBack.keep(pageUrl, doc);
      logger.debug("page", "the page's template is being learned or verified: page put back, its document kept", { url: pageUrl, template, reason: choice.reason, waitSeconds: choice.retryInMs / 1000 });
      return { waitMs: choice.retryInMs };
    }
    if (choice.mode === "static") {
      const { fetched: _fetched, ...result } = await loader.capture(doc, { fetches: choice.fetches, links: choice.links, sink: options.sink, skipIfArchived: options.skipIfArchived, text: this.options.text });
      if (result.document && !result.error) this.options.report.add({ url: pageUrl, capture: "static", template });
      return { ...result, capture: "static" };
    }
    return this.browse(worker, pageUrl, options, doc, { template, purpose: choice.purpose, reason: choice.reason }, notYetFound, choice.turn);
  }

  /**
   * The page in the browser. Its document, when fetched already, is stored first and the browser renders it from that
   * record (the attempt answers it from the archive as a retry does). Then the template learns, or is verified.
   */
  private async browse(worker: PageWorker, pageUrl: string, options: LoadOptions & { sink: ExchangeSink }, doc: StaticDocument | null, why: Omit<CaptureEntry, "url" | "capture" | "ts">, notYetFound: LinksNotYetFound = async (links) => links, turn: VerifyTurn = { selectors: [], first: false }): Promise<PageLoadResult> {
    const judged = { verify: false };
    try {
      return await this.browsePage(worker, pageUrl, options, doc, why, notYetFound, judged, turn.selectors);
    } finally {
      // A verify page that was not judged (not loaded, a duplicate, an error) gives its turn to the template's next page.
      if (why.purpose === "verify" && why.template !== null && !judged.verify) await this.options.book.verifyFailed(why.template, turn).catch(() => undefined);
    }
  }

  private async browsePage(worker: PageWorker, pageUrl: string, options: LoadOptions & { sink: ExchangeSink }, doc: StaticDocument | null, why: Omit<CaptureEntry, "url" | "capture" | "ts">, notYetFound: LinksNotYetFound, judged: { verify: boolean }, selectors: string[]): Promise<PageLoadResult> {
    let answersFromArchive = false;
    if (doc) {
      const stored = await this.loaderOf(worker).storeDocument(doc, options.sink);
      if (stored.kind === "revisit" && options.skipIfArchived) return duplicateOf(doc);
      if (stored.kind === "response") {
        const { exchange } = doc;
        this.options.earlierAttempts.of(pageUrl).remember(exchange.url, exchange.status, { path: stored.path, offset: stored.record.offset, length: stored.record.length, wacz: stored.wacz, size: bodySize(exchange.body) });
        answersFromArchive = true;
      }
    }
    const result = { ...(await worker.load(pageUrl, { ...options, retry: options.retry || answersFromArchive })), capture: "browser" as const };
    if (!result.document || result.error) return result;
    if (!doc?.parsed || why.template === null) {
      this.options.report.add({ url: pageUrl, capture: "browser", ...why });
      return result;
    }
    try {
      if (why.purpose === "learn") await this.learn(worker, pageUrl, doc, why.template, result, notYetFound);
      if (why.purpose === "verify") {
        const verify = await this.verify(worker, pageUrl, doc, why.template, result, notYetFound, selectors);
        judged.verify = true;
        this.options.report.add({ url: pageUrl, capture: "browser", ...why, verify });
        return result;
      }
    } catch (err) {
      // The page itself is captured: only what the template learns from it is lost.
      logger.warn("page", "the page's template could not learn from it", { url: pageUrl, template: why.template, error: errorMessage(err) });
    }
    this.options.report.add({ url: pageUrl, capture: "browser", ...why });
    return result;
  }

  /**
   * What the browsed page showed beyond its document, kept as the template's observation. Of its extra links only
   * those that would still bring the crawl a page count: a script-made menu or sidebar that names pages the crawl
   * found already (a section's index lists them) or will not follow takes nothing from a static pass.
   */
  private async learn(worker: PageWorker, pageUrl: string, doc: StaticDocument, template: string, result: PageLoadResult, notYetFound: LinksNotYetFound): Promise<void> {
    const parsed = doc.parsed!;
    const planned = new Set(await this.loaderOf(worker).plannedUrls(doc));
    const own = ownUrls(pageUrl, result);
    const extraFetches = fetchedUrls(result.captured ?? []).filter((url) => !planned.has(url) && !own.has(url));
    const staticLinks = new Set(pageLinkUrls(parsed.references.links));
    const scriptLinks = result.links.filter((link) => !staticLinks.has(link));
    const extraLinks = await notYetFound(scriptLinks);
    const stillNew = new Set(extraLinks);
    const observation: BrowsedObservation = {
      pageUrl,
      scripts: parsed.references.requisites.filter((r) => r.kind === "script").map((r) => r.url),
      extraFetches,
      extraLinks,
      staticFetches: [...planned, ...own],
      staticLinks: [...staticLinks, ...own],
      foundLinks: scriptLinks.filter((link) => !stillNew.has(link)),
      behaviorsFound: (result.behaviorLinks?.length ?? 0) > 0 || result.behaviors?.foundMore === true,
      ...(result.queriedSelectors ? {
        absentSelectors: result.queriedSelectors.filter((q) => !q.matched).map((q) => q.selector),
        presentSelectors: result.queriedSelectors.filter((q) => q.matched).map((q) => q.selector),
      } : {}),
    };
    await this.options.book.learn(template, observation);
    logger.debug("page", "learned from the page's template", { url: pageUrl, template, extraFetches: extraFetches.length, extraLinks: extraLinks.length, behaviorsFound: observation.behaviorsFound });
  }

  /** What the browser fetched (and linked) that the static pass would have lacked, and the reverse; a miss makes the template fall back. */
  private async verify(worker: PageWorker, pageUrl: string, doc: StaticDocument, template: string, result: PageLoadResult, notYetFound: LinksNotYetFound, selectors: string[]): Promise<NonNullable<CaptureEntry["verify"]>> {
    const parsed = doc.parsed!;
    const learned = await this.options.book.learned(template);
    const derived = learned ? deriveFor(learned, pageUrl) : { fetches: [], links: [] };
    const derivedFetches = "underivable" in derived ? [] : derived.fetches;
    const derivedLinks = "underivable" in derived ? [] : derived.links;
    const staticFetches = new Set([...(await this.loaderOf(worker).plannedUrls(doc)), ...derivedFetches]);
    const staticLinks = new Set([...pageLinkUrls(parsed.references.links), ...derivedLinks]);
    const own = ownUrls(pageUrl, result);
    const browserFetches = fetchedUrls(result.captured ?? []).filter((url) => !own.has(url) && !(learned && isVolatile(learned, url)));
    const browserAll = new Set((result.captured ?? []).map((c) => c.url));
    const missing = { fetches: browserFetches.filter((url) => !staticFetches.has(url)), links: await notYetFound(result.links.filter((link) => !staticLinks.has(link))) };
    const extra = [...staticFetches].filter((url) => !browserAll.has(url));
    const outcome = await this.options.book.verified(template, pageUrl, missing, selectors);
    return { missing: [...missing.fetches, ...missing.links], extra, outcome };
  }
}

/** The page URL and its document's, as the browser reached it (redirects, fragment): not a requisite of the page. */
function ownUrls(pageUrl: string, result: PageLoadResult): Set<string> {
  return new Set([pageUrl, withoutHash(pageUrl), ...(result.document ? [result.document.url] : [])]);
}

/** The URLs a page's capture fetched to show itself, each once, in capture order. */
function fetchedUrls(captured: readonly CapturedSummary[]): string[] {
  return [...new Set(captured.filter((c) => COUNTED_TYPES.has(c.resourceType) && c.status >= 200 && c.status < 400).map((c) => c.url))];
}

/** --dedupePagesMinDepth: the document fetched is archived already (its revisit written): the page is not loaded further. */
function duplicateOf(doc: StaticDocument): PageLoadResult {
  return { document: documentSummary(doc), title: "", links: [], error: null, truncated: [], duplicate: true, capture: "static" };
}
