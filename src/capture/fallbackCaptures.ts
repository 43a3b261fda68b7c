import type { Protocol } from "puppeteer-core";
import { bodySize, headerValue, mimeTypeOf, type Exchange } from "../archive/exchange.js";
import { decodable } from "../fetch/contentDecoding.js";
import { discardBody, type FallbackFetcher } from "../fetch/fallbackFetcher.js";
import { logger } from "../log/logger.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";
import type { ExchangeWork } from "./exchangeWork.js";
import type { CapturedSummary, PageAttempt } from "./pageAttempt.js";
import type { DirectDecode } from "./bodies/responseBody.js";

/** Hands an exchange fetched outside the browser on as the page capture would; false (and logged) when it could not be stored. */
export type StoreFetched = (exchange: Exchange, attempt: PageAttempt, failure: string) => Promise<boolean>;

/**
 * What the browser cannot hand over whole, fetched outside it (fetch/fallbackFetcher.ts) and stored as part
 * of the page: the whole resource behind a 206, the response behind the browser's own revalidation (304), a
 * body the browser lost, a response its cache served that the crawl holds no capture of.
 */
export class FallbackCaptures {
  constructor(
    private readonly sink: ExchangeSink,
    private readonly fetcher: FallbackFetcher,
    private readonly work: ExchangeWork,
    private readonly store: StoreFetched,
  ) {}

  /**
   * A 206 seen in the browser: archive the whole resource instead of the fragment, in the background;
   * once per URL and attempt (a video makes many range requests), and not when the crawl holds it already
   * (asked `after` the given work: see afterCacheHit).
   */
  afterPartialContent(url: string, requestHeaders: [string, string][], attempt: PageAttempt, after?: Promise<unknown>): void {
    if (attempt.refetched.has(url)) return;
    attempt.refetched.add(url);
    const work = (after ?? Promise.resolve()).then(() => this.sink.hasStoredResponse(url)).then(async (stored) => {
      if (!stored && this.pageOver(attempt, url)) return;
      const exchange = stored ? null : await this.fetcher.wholeResource(url, requestHeaders);
      if (!exchange || !(await this.store(exchange, attempt, "full fetch of a resource the browser did not hand over whole failed"))) return;
      // A progressive video or audio file (the browser asks for those in ranges): the page's line for it.
      const mime = mimeTypeOf(exchange);
      if (/^(video|audio)\//.test(mime)) logger.info("media", "media file captured whole", { page: attempt.pageUrl, url, mime, bytes: bodySize(exchange.body), ...(exchange.truncated ? { truncated: exchange.truncated } : {}) });
    });
    this.work.background(work);
  }

  /**
   * A 200 the browser served from its HTTP cache (cacheHits.ts): fetched whole as after a 206 if the crawl
   * holds no capture of it (its first capture lost, or its attempt's exchanges not kept). Asked once the
   * exchanges under way are stored: the capture of this very URL may be one of them.
   */
  afterCacheHit(url: string, attempt: PageAttempt): void {
    this.afterPartialContent(url, [], attempt, this.work.exchangesSettled());
  }

  /**
   * The browser revalidated its cached copy (304): unless the crawl holds the 200 already, fetch the
   * full resource directly and store that. A page's own document is fetched to learn its type.
   */
  async afterRevalidation(url: string, requestHeaders: [string, string][], pageDocument: boolean, attempt: PageAttempt): Promise<{ status: number; mime: string } | null> {
    if (!pageDocument && (await this.sink.hasStoredResponse(url))) return null;
    if (this.pageOver(attempt, url)) return null;
    const fetched = await this.fetcher.fullResponse(url, requestHeaders, pageDocument);
    const exchange = fetched && pageDocument && attempt.isPageDocument(url) ? { ...fetched, pageDocument: true } : fetched;
    if (!exchange || !(await this.store(exchange, attempt, "full fetch after the browser's revalidation (304) failed"))) return null;
    return { status: exchange.status, mime: mimeTypeOf(exchange) };
  }

  /**
   * For a compressed answer to a GET, streamed: its body fetched again and decoded outside the browser
   * (responseBody.ts decides when), if Node can undo its Content-Encoding.
   */
  directDecoder(request: Protocol.Network.Request, requestHeaders: [string, string][], status: number, responseHeaders: [string, string][]): DirectDecode | undefined {
    const encoding = headerValue(responseHeaders, "content-encoding");
    if (request.method !== "GET" || request.hasPostData || !encoding || !decodable(encoding)) return undefined;
    return () => this.fetcher.decodedBody(request.url, requestHeaders, status, encoding);
  }

  /** The page URL fetched outside the browser (it would not render it, a download say); null if that failed too. */
  async page(url: string, timeoutMs: number, navigationError: string, attempt: PageAttempt, rateLimitStatusCodes: readonly number[]): Promise<CapturedSummary | null> {
    const fetched = await this.fetcher.page(url, timeoutMs, navigationError);
    if (fetched && rateLimitStatusCodes.includes(fetched.status)) {
      attempt.rateLimited = { url, status: fetched.status, retryAfter: headerValue(fetched.responseHeaders, "retry-after") ?? null };
      await discardBody(fetched);
      return null;
    }
    const exchange = fetched ? { ...fetched, pageDocument: true } : null;
    if (!exchange || !(await this.store(exchange, attempt, "direct fetch of the page could not be stored"))) return null;
    return { url, status: exchange.status, mime: mimeTypeOf(exchange), resourceType: "Direct", location: null, date: exchange.date };
  }

  /** A response whose body the browser could not give: fetched directly (GET only), else reported lost. */
  async bodyUnavailable(request: Protocol.Network.Request, requestHeaders: [string, string][], status: number, error: string, attempt: PageAttempt): Promise<void> {
    const exchange = request.method === "GET" && !this.pageOver(attempt, request.url) ? await this.fetcher.sameResponse(request.url, requestHeaders, status) : null;
    if (exchange && (await this.store(exchange, attempt, "direct fetch for an unavailable body failed"))) {
      logger.debug("capture", "response body unavailable in the browser; fetched directly", { url: request.url, error });
      return;
    }
    attempt.lost.add(request.url);
    logger.warn("capture", "response body unavailable; exchange not stored", { url: request.url, method: request.method, error });
  }

  /** The page's drain is over: a fetch for it now would reach its server after the page was crawled. */
  private pageOver(attempt: PageAttempt, url: string): boolean {
    if (attempt.drained) logger.debug("capture", "page already crawled: not fetched outside the browser", { page: attempt.pageUrl, url });
    return attempt.drained;
  }
}
