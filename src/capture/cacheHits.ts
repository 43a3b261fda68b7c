import type { CDPSession, Protocol } from "puppeteer-core";
import type { FallbackCaptures } from "./fallbackCaptures.js";
import type { PageAttempt } from "./pageAttempt.js";

/** Request ids reported served from the cache but whose response has not come yet: at most this many kept. */
const MAX_PENDING = 2000;

/**
 * Responses Chromium serves from its HTTP cache (memory or disk) may never pause in the Fetch domain (builds
 * differ): then the capture does not see them. Most were captured when the network first sent them. Each one (Network domain events)
 * is listed with the page's attempt (the --qa page info, the page's document if the cache gave it), and a 200
 * goes to the fallbacks, which fetch it whole if the crawl holds no capture of it (its first capture lost): the
 * cache stays on, and nothing it serves is missed. Nothing after the page's end: its capture is over.
 */
export function watchCacheHits(cdp: CDPSession, attemptNow: () => PageAttempt, fallbacks: Pick<FallbackCaptures, "afterCacheHit">): void {
  const fromCache = new Set<string>();
  cdp.on("Network.requestServedFromCache", ({ requestId }: Protocol.Network.RequestServedFromCacheEvent) => {
    if (fromCache.size >= MAX_PENDING) fromCache.delete(fromCache.values().next().value!);
    fromCache.add(requestId);
  });
  cdp.on("Network.loadingFailed", ({ requestId }: Protocol.Network.LoadingFailedEvent) => fromCache.delete(requestId));
  cdp.on("Network.responseReceived", ({ requestId, type, response }: Protocol.Network.ResponseReceivedEvent) => {
    const cached = fromCache.delete(requestId) || response.fromDiskCache === true || response.fromPrefetchCache === true;
    if (!cached || response.fromServiceWorker || !/^https?:/.test(response.url)) return;
    const attempt = attemptNow();
    if (attempt.ended) return;
    const location = Object.entries(response.headers).find(([name]) => name.toLowerCase() === "location")?.[1] ?? null;
    attempt.captured.push({ url: response.url, status: response.status, mime: response.mimeType, resourceType: type, location, date: new Date() });
    if (response.status === 200) fallbacks.afterCacheHit(response.url, attempt);
  });
}
