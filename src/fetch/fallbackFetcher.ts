import { rm } from "node:fs/promises";
import { headerValue, type Exchange, type ExchangeBody } from "../archive/exchange.js";
import { errorMessage, logger } from "../log/logger.js";
import type { BodyLimits } from "./bodyLimits.js";
import { directFetch } from "./directFetch.js";
import type { ConnectionRules } from "./connectionRules.js";

/** Total time a fallback fetch may take (connect to last byte) unless told otherwise. */
const DEFAULT_FALLBACK_DEADLINE_MS = 60_000;

export interface FallbackFetcherOptions {
  /** The run's address policy, --header rules and blocking (fetch/connectionRules.ts). */
  rules: ConnectionRules;
  userAgent: string | null;
  /** Headers every fetch sends unless the browser's request had its own (the tabs' Accept-Language, --lang). */
  headers?: readonly [string, string][];
  /** The size cap and storage limits every fetched body is held to. */
  limits?: BodyLimits;
  /** Total deadline of each fetch (default 60 s). */
  timeoutMs?: number;
  /** Where a URL is really fetched (--originOverride), or null: the exchange keeps the URL asked for. */
  target?: (url: string) => string | null;
}

/**
 * What the crawler fetches outside the browser for the archive, when the browser could not hand a
 * response over as a whole capture. Together with directFetch below it, the one place archived bytes
 * come from that did not come through Chromium. Each method returns the exchange to store (the capture
 * hands it to the exchange sink), or null when there is nothing to store; failures are logged here.
 * What --blockRules or --blockAds block is not fetched (null, and reported as blocked); a page's own
 * document never is blocked.
 */
export class FallbackFetcher {
  constructor(private readonly options: FallbackFetcherOptions) {}

  /** The rules the fetcher's requests obey: those of the run it fetches for. */
  get rules(): ConnectionRules {
    return this.options.rules;
  }

  private blocked(url: string): boolean {
    return this.options.rules.blocking?.blockedOutsideBrowser(url) ?? false;
  }

  private async fetch(url: string, headers?: [string, string][], timeoutMs = this.options.timeoutMs ?? DEFAULT_FALLBACK_DEADLINE_MS, decode = false): Promise<Exchange> {
    const own = (this.options.headers ?? []).filter(([name]) => !headers?.some(([given]) => given.toLowerCase() === name.toLowerCase()));
    const target = this.options.target?.(url) ?? null;
    const exchange = await directFetch(target ?? url, { rules: this.options.rules, userAgent: this.options.userAgent, headers: [...own, ...(headers ?? [])], timeoutMs, limits: this.options.limits, decode });
    // Redirects are not followed: the exchange is the answer for the URL asked for.
    return target ? { ...exchange, url } : exchange;
  }

  /** The browser got a 206 (a fragment): the whole resource, when the server sends it whole (200). */
  async wholeResource(url: string, requestHeaders: [string, string][]): Promise<Exchange | null> {
    if (this.blocked(url)) return null;
    try {
      const exchange = await this.fetch(url, requestHeaders);
      if (exchange.status === 200) return exchange;
      await discardBody(exchange);
      return null;
    } catch (err) {
      logger.warn("capture", "full fetch of a resource failed", { url, error: errorMessage(err) });
      return null;
    }
  }

  /** The browser revalidated its own cached copy (304): the full response, fetched without its validators. */
  async fullResponse(url: string, requestHeaders: [string, string][], pageDocument = false): Promise<Exchange | null> {
    if (!pageDocument && this.blocked(url)) return null;
    try {
      return await this.fetch(url, requestHeaders);
    } catch (err) {
      logger.warn("capture", "full fetch after the browser's revalidation (304) failed", { url, error: errorMessage(err) });
      return null;
    }
  }

  /** The browser could not give a response's body: the same response (same status) fetched again, else null. */
  async sameResponse(url: string, requestHeaders: [string, string][], status: number): Promise<Exchange | null> {
    if (this.blocked(url)) return null;
    try {
      const exchange = await this.fetch(url, requestHeaders);
      if (exchange.status === status) return exchange;
      await discardBody(exchange);
      logger.warn("capture", "direct fetch for an unavailable body got another response", { url, browserStatus: status, status: exchange.status });
      return null;
    } catch (err) {
      logger.warn("capture", "direct fetch for an unavailable body failed", { url, error: errorMessage(err) });
      return null;
    }
  }

  /**
   * A compressed body the browser is handing over decoded, slowly (through CDP, a megabyte a call: a gzip
   * bomb's 300 MiB takes seconds), fetched again and decoded here: the body, whole or cut at the size cap
   * ("length"); null when the answer is not the same (status, Content-Encoding) or did not come whole.
   */
  async decodedBody(url: string, requestHeaders: [string, string][], status: number, contentEncoding: string): Promise<{ body: ExchangeBody; truncated: "length" | null } | null> {
    if (this.blocked(url)) return null;
    try {
      const exchange = await this.fetch(url, requestHeaders, undefined, true);
      const encoding = (headerValue(exchange.responseHeaders, "content-encoding") ?? "").trim().toLowerCase();
      if (exchange.status === status && encoding === contentEncoding.trim().toLowerCase() && (!exchange.truncated || exchange.truncated === "length")) {
        return { body: exchange.body, truncated: exchange.truncated ?? null };
      }
      await discardBody(exchange);
      logger.debug("capture", "direct fetch to decode a body got another answer; read through the browser", { url, browserStatus: status, status: exchange.status, encoding, truncated: exchange.truncated });
      return null;
    } catch (err) {
      logger.debug("capture", "direct fetch to decode a body failed; read through the browser", { url, error: errorMessage(err) });
      return null;
    }
  }

  /**
   * A fetch standing in for the browser's own request (hybrid capture's pages of a known template): `headers` are the
   * ones the browser would send (static/browserRequestHeaders.ts, plus Cookie). Like every direct fetch it drops
   * Accept-Encoding and Range and asks for the codings replay tools read ("gzip, deflate, br"), so the body may come
   * encoded: it is kept as sent. Not followed when it redirects. Null when --blockRules or --blockAds block the URL
   * (reported as blocked, `page` named); a page's own document (`pageDocument`) never is. Throws when nothing could be
   * fetched. The exchange's resourceType is "Direct": the caller sets the browser's name for the kind.
   */
  async asBrowser(url: string, headers: [string, string][], pageDocument: boolean, page: string | null = null): Promise<Exchange | null> {
    if (!pageDocument && (this.options.rules.blocking?.blockedOutsideBrowser(url, page) ?? false)) return null;
    return this.fetch(url, headers);
  }

  /** A page the browser would not render (a download, say), fetched within the page's own time allowance. */
  async page(url: string, timeoutMs: number, navigationError: string): Promise<Exchange | null> {
    try {
      return await this.fetch(url, undefined, timeoutMs);
    } catch (err) {
      logger.debug("fetch", "direct fetch failed too", { url, navigationError, error: errorMessage(err) });
      return null;
    }
  }
}

/** Drop a fetched body that will not be stored (a large one is a temp file). */
export async function discardBody(exchange: Exchange): Promise<void> {
  if (exchange.body.kind === "file") await rm(exchange.body.path, { force: true });
}
