import { pageResourceUrn, resourceRecord, type PageResourceKind } from "../archive/records.js";
import type { WarcWriter, WrittenRecord } from "../archive/warcWriter.js";

/** A page's text or screenshot, to be stored as a `urn:<kind>:<page url>` resource record. */
export interface PageResource {
  kind: PageResourceKind;
  contentType: string;
  content: Uint8Array;
}

export const TEXT_CONTENT_TYPE = "text/plain; charset=utf-8";

/** A request of the page as the crawl saw it answered. */
export interface PageRequest {
  url: string;
  status: number;
  mime: string;
  resourceType: string;
}

/**
 * The urn:pageinfo: record of a page (browsertrix-crawler's format, which its QA reads too): every URL the
 * page requested with the answer's status, type and Chromium resource type, the last answer of each.
 */
export function pageInfoResource(pageUrl: string, date: Date, requests: readonly PageRequest[]): PageResource {
  const urls: Record<string, { status: number; mime: string; type: string }> = {};
  for (const r of requests) urls[r.url] = { status: r.status, mime: r.mime, type: r.resourceType };
  const content = Buffer.from(JSON.stringify({ url: pageUrl, ts: date.toISOString(), urls }), "utf8");
  return { kind: "pageinfo", contentType: "application/json", content };
}

/**
 * Writes a page's resource records (text, screenshots). They are not HTTP captures: no claim, no
 * dedupe index entry, no capture history, not counted in totalUrls; each page attempt that is kept
 * writes its own.
 */
export class PageResourceRecorder {
  constructor(private readonly writer: WarcWriter) {}

  /** All of a page's resources in one batch (written whole or not at all), dated like the page. */
  async record(pageUrl: string, date: Date, resources: PageResource[]): Promise<WrittenRecord[]> {
    if (!resources.length) return [];
    return this.writer.writeRecords(resources.map((r) => resourceRecord(pageResourceUrn(r.kind, pageUrl), date, r.contentType, r.content)));
  }
}
