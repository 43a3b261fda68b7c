/**
 * What the dedupe index counts and indexes: the one rule shared by the crawler (counting live, as it
 * writes records) and the indexer (counting from a WACZ's CDXJ), so an imported crawl's totals equal
 * the live ones. Only HTTP(S) `response` and `revisit` captures count; `resource` and `metadata`
 * records (browsertrix-crawler's urn:pageinfo:, urn:text:, urn:view: screenshots...) do not.
 */
import type { CountField } from "./indexKeys.js";

export type CaptureKind = "response" | "revisit";

/** sha256 of zero bytes: an empty payload is never an original worth pointing revisits at. */
export const EMPTY_PAYLOAD_DIGEST = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const HTTP_URL = /^https?:\/\//i;

/** The capture a record is, or null when it is not one (other record types, non-HTTP target URIs). */
export function captureKind(warcType: string, url: string): CaptureKind | null {
  if (warcType !== "response" && warcType !== "revisit") return null;
  return HTTP_URL.test(url) ? warcType : null;
}

/**
 * The WARC type behind a CDXJ line, as far as CDXJ tells it: revisits are indexed with mime
 * "warc/revisit", HTTP responses with their status; resource and metadata records get their WARC
 * Content-Type as mime and no status (warcio.js) or a made-up "200" (pywb's Python indexer), which
 * is why captureKind also needs the URL.
 */
export function cdxWarcType(mime: string | undefined, status: string | undefined): string {
  if (mime === "warc/revisit") return "revisit";
  return status !== undefined && /^\d{3}$/.test(status) ? "response" : "resource";
}

/** A response's payload goes into the index: a 2xx other than 206 (a fragment) with a non-empty body. */
export function isIndexablePayload(status: number, empty: boolean): boolean {
  return status >= 200 && status < 300 && status !== 206 && !empty;
}

const PER_CAPTURE: Record<CaptureKind, { totalUrls: number; dupeUrls: number }> = {
  response: { totalUrls: 1, dupeUrls: 0 },
  revisit: { totalUrls: 1, dupeUrls: 1 },
};

/** What one capture adds to the crawl's counts (conservedSize: original size minus the revisit's). */
export function captureCounts(kind: CaptureKind | null, conservedSize = 0): Partial<Record<CountField, number>> {
  if (!kind) return {};
  return kind === "revisit" ? { ...PER_CAPTURE.revisit, conservedSize } : { ...PER_CAPTURE.response };
}

/** The counts of many captures: captureCounts summed (the indexer tallies kinds, then adds once). */
export function tallyCounts(tally: Record<CaptureKind, number>, conservedSize: number): Partial<Record<CountField, number>> {
  return {
    totalUrls: tally.response * PER_CAPTURE.response.totalUrls + tally.revisit * PER_CAPTURE.revisit.totalUrls,
    dupeUrls: tally.response * PER_CAPTURE.response.dupeUrls + tally.revisit * PER_CAPTURE.revisit.dupeUrls,
    conservedSize,
  };
}
