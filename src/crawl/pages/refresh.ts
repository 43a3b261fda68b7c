import type { ConditionalRequest } from "../../capture/pageCapture.js";
import type { CaptureHistory, KnownCapture } from "../../dedupe/captureHistory.js";
import { payloadResponseOf, type PayloadResponse } from "../../dedupe/payloadResponse.js";
import { digitsToWarcDate } from "../../archive/warcDate.js";
import { errorMessage, logger } from "../../log/logger.js";
import { classifyChange, type ChangeEntry, type ChangeReport } from "../../reports/changeReport.js";

// Re-crawls (--refresh, --skipFreshDays): what the capture history says of a page before it is loaded,
// and what changed once it is.

/** The page's latest archived capture; null when it has none (or the history is unavailable: then it is fetched in full). */
export async function latestCapture(url: string, history: CaptureHistory): Promise<KnownCapture | null> {
  try {
    return await history.latest(url);
  } catch (err) {
    logger.warn("history", "capture history unavailable: fetching the page in full", { url, error: errorMessage(err) });
    return null;
  }
}

/** --skipFreshDays: archived recently enough not to be fetched again. */
export function isFresh(previous: KnownCapture, days: number): boolean {
  if (days <= 0) return false;
  return Date.now() - Date.parse(digitsToWarcDate(previous.date)) < days * 86_400_000;
}

/** If-None-Match / If-Modified-Since from the archived capture; undefined when it has none a 304 could answer. */
export function conditionalHeaders(previous: KnownCapture): Record<string, string> | undefined {
  // Only content can be confirmed: a 304 to a redirect's or an error's validators would stand for nothing.
  if (!previous.original && !(previous.status >= 200 && previous.status < 300)) return undefined;
  const headers: Record<string, string> = {};
  if (previous.etag) headers["If-None-Match"] = previous.etag;
  if (previous.lastModified) headers["If-Modified-Since"] = previous.lastModified;
  return Object.keys(headers).length ? headers : undefined;
}

/** The conditional request for the archived capture, whose 304 would confirm the payload `payload` holds. */
export function conditionalRequest(previous: KnownCapture, payload: PayloadResponse): ConditionalRequest | undefined {
  const headers = conditionalHeaders(previous);
  if (!headers) return undefined;
  return {
    headers,
    confirms: {
      url: payload.url,
      crawlId: payload.crawlId,
      date: payload.date,
      digest: previous.digest,
      waczIndex: payload.waczIndex,
      waczFilename: payload.waczFilename,
      // A 304-confirmed capture stands for the response it confirmed (status 200); the headers are the
      // capture's own (a revisit of another URL's payload has its own), updated by the 304's.
      status: previous.status === 304 ? 200 : previous.status,
      statusText: previous.statusText,
      headers: previous.headers,
    },
  };
}

/**
 * --refresh: the page's request made conditional, its 304 confirming the response record that holds the
 * archived payload (the capture's own, or the one it was a revisit of). Undefined: fetched in full (no
 * validators, or the dedupe index cannot say where the payload is).
 */
export async function refreshRequest(previous: KnownCapture, history: CaptureHistory): Promise<ConditionalRequest | undefined> {
  if (!conditionalHeaders(previous)) return undefined;
  try {
    const payload = await payloadResponseOf(history.redis, previous);
    return payload ? conditionalRequest(previous, payload) : undefined;
  } catch (err) {
    logger.warn("history", "dedupe index unavailable: fetching the page in full", { url: previous.url, error: errorMessage(err) });
    return undefined;
  }
}

export function previousOf(previous: KnownCapture | null): ChangeEntry["previous"] {
  return previous ? { crawlId: previous.crawlId, date: previous.date, digest: previous.digest } : null;
}

/**
 * Compare the page URL's own capture in this crawl (for a redirect, the redirect itself, not the page it
 * led to) with its archived one. Without an own capture (history unavailable) the document's status stands.
 */
export async function reportChange(url: string, documentStatus: number, previous: KnownCapture | null, history: CaptureHistory, report: ChangeReport): Promise<void> {
  const own = await history.ownCapture(url).catch(() => null);
  const current = own ?? { status: documentStatus, digest: null };
  const change = classifyChange(previous, current);
  if (change) await report.add({ url, change, status: current.status, digest: current.digest ?? previous?.digest ?? null, previous: previousOf(previous) });
}
