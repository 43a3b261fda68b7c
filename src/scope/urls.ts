/** URL rules shared by seeds, link extraction and the queue: only http(s), no fragments. */

export class UrlRefusedError extends Error {}

const ALLOWED_PROTOCOLS = new Set(["http:", "https:"]);

/** Parse and normalize a URL for crawling; throws UrlRefusedError for anything that is not http(s). */
export function normalizeCrawlUrl(raw: string, base?: string, keepHash = false): string {
  let url: URL;
  try {
    url = new URL(raw.trim(), base);
  } catch {
    throw new UrlRefusedError(`not a valid URL: ${JSON.stringify(raw)}`);
  }
  if (!ALLOWED_PROTOCOLS.has(url.protocol)) {
    throw new UrlRefusedError(`only http(s) URLs can be crawled, got ${url.protocol} in ${JSON.stringify(raw)}`);
  }
  if (!url.hostname) throw new UrlRefusedError(`URL has no host: ${JSON.stringify(raw)}`);
  if (!keepHash) url.hash = "";
  return url.href;
}

/** Like normalizeCrawlUrl, but returns null instead of throwing (for links found in pages). */
export function tryNormalizeCrawlUrl(raw: string, base?: string, keepHash = false): string | null {
  try {
    return normalizeCrawlUrl(raw, base, keepHash);
  } catch {
    return null;
  }
}

/**
 * A page's links as the crawl takes them: each href normalized against `base` (or absolute), fragments kept (whether they
 * tell pages apart is the seed scope's call, --allowHashUrls), what is no crawlable URL dropped, each once, in order.
 */
export function pageLinkUrls(hrefs: Iterable<string>, base?: string): string[] {
  return [...new Set([...hrefs].map((h) => tryNormalizeCrawlUrl(h, base, true)).filter((u): u is string => u !== null))];
}

/**
 * The key a page is known by in the queue's seen set: two URLs with one key are one page, crawled once
 * (under the URL seen first, which is the one loaded and archived). As browsertrix-crawler keys its
 * seen set (normalize-url with sortQueryParameters): query parameters in a stable order by name, no
 * empty query ("/p?" is "/p"), no empty parameters ("a=1&&b=2"), no fragment unless `keepHash`
 * (--allowHashUrls); scheme and host in lower case and default ports dropped, as the URL parser does.
 * Parameters keep their bytes as written: "%20" and "+" stay apart, as a server may tell them apart.
 */
export function crawlKey(url: string, keepHash = false): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (!keepHash) parsed.hash = "";
  const pairs = parsed.search.slice(1).split("&").filter((pair) => pair !== "");
  const nameOf = (pair: string) => pair.split("=", 1)[0];
  // Array.prototype.sort is stable: parameters of one name keep their order (?a=2&a=1 is not ?a=1&a=2).
  pairs.sort((x, y) => (nameOf(x) < nameOf(y) ? -1 : nameOf(x) > nameOf(y) ? 1 : 0));
  parsed.search = pairs.length ? "?" + pairs.join("&") : "";
  return parsed.href;
}

/** The URL without its fragment: what the browser requests (a fragment never goes over the network). */
export function withoutHash(url: string): string {
  const at = url.indexOf("#");
  return at < 0 ? url : url.slice(0, at);
}
