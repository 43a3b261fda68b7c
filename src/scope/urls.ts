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
