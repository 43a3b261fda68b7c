import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import type { Deduplicator } from "../dedupe/deduplicator.js";
import { bodySize, headerValue, type Exchange } from "./exchange.js";
import { payloadDigest } from "./digest.js";
import { newRecordId, notModifiedHead, requestRecord, responseRecord, revisitRecord, REVISIT_PROFILE_IDENTICAL, REVISIT_PROFILE_NOT_MODIFIED } from "./records.js";
import { storedResponseHeaders } from "./httpHeaders.js";
import type { CaptureHistory } from "../dedupe/captureHistory.js";
import { digitsToWarcDate, warcDateToDigits, type CaptureRecord } from "../dedupe/keys.js";
import { errorMessage, logger } from "../log/logger.js";
import type { WarcWriter, WrittenRecord } from "./warcWriter.js";
import type { OwnWacz } from "../dedupe/dependencies.js";
import type { ExchangeClaims } from "../state/exchangeClaims.js";


export type RecordOutcome =
  | { kind: "response" | "revisit"; record: WrittenRecord; request: WrittenRecord }
  | { kind: "skipped"; reason: "already-stored" | "partial-content" | "browser-revalidation" };

/**
 * Turns captured exchanges into WARC records: the step between "page" and "WARC" in the pipeline.
 * Within one crawl, a URL with the same status and method is stored once; a payload the dedupe index
 * already holds becomes a revisit record.
 */
export class ExchangeRecorder {
  constructor(
    private readonly writer: WarcWriter,
    private readonly claims: ExchangeClaims,
    private readonly dedupe: Deduplicator,
    /** The WACZ a WARC file is packaged into, with its index in c:<crawlId>:wacz when registered. */
    private readonly waczOf: (warcFilename: string) => Promise<OwnWacz>,
    private readonly history: CaptureHistory,
  ) {}

  async record(exchange: Exchange): Promise<RecordOutcome> {
    try {
      // A 206 body is a fragment: storing it as the resource would be wrong. Callers may fetch the full body.
      if (exchange.status === 206) return { kind: "skipped", reason: "partial-content" };
      // A 304 to the browser's own revalidation is not the resource (and has no body): only a 304 to a
      // conditional request the crawler made confirms an archived capture.
      if (exchange.status === 304 && !exchange.confirms) return { kind: "skipped", reason: "browser-revalidation" };
      // A cut-off body holds no claim, so a later complete fetch of the URL is still stored.
      if (exchange.truncated) return await this.writeTruncated(exchange);
      const claim = { status: exchange.status, method: exchange.method, url: exchange.url, requestDigest: requestBodyDigest(exchange) };
      if (!(await this.claims.claim(claim))) {
        return { kind: "skipped", reason: "already-stored" };
      }
      try {
        const outcome = await this.write(exchange);
        await this.claims.confirm(claim);
        return outcome;
      } catch (err) {
        await this.claims.unclaim(claim).catch(() => undefined);
        throw err;
      }
    } finally {
      if (exchange.body.kind === "file") await rm(exchange.body.path, { force: true });
    }
  }

  /** Whether this crawl holds the URL's 200 response (to GET) already. */
  async hasStoredResponse(url: string): Promise<boolean> {
    return this.claims.isStored({ status: 200, method: "GET", url }).catch(() => false);
  }

  private async write(exchange: Exchange): Promise<RecordOutcome> {
    if (exchange.status === 304 && exchange.confirms) return this.writeNotModified(exchange, exchange.confirms);
    const digest = await payloadDigest(exchange.body);
    const size = bodySize(exchange.body);
    const eligible = this.dedupe.isEligible(exchange.status, size);
    return this.dedupe.withDigestLock(digest, async () => {
      const original = eligible ? await this.dedupe.findOriginal(digest) : null;
      const recordId = newRecordId();
      const main = original
        ? revisitRecord(exchange, recordId, {
            url: original.url,
            date: digitsToWarcDate(original.date),
            digest,
            waczFilename: original.waczFilename ?? undefined,
            profile: REVISIT_PROFILE_IDENTICAL,
          })
        : responseRecord(exchange, recordId, digest);
      const [record, request] = await this.writer.writeRecords([main, requestRecord(exchange, recordId)]);
      const placement = { warcType: record.type, url: record.url, date: record.date, length: record.length, wacz: await this.waczOf(record.filename) };
      if (original) {
        await this.dedupe.noteRevisit(original, placement);
      } else {
        await this.dedupe.noteResponse(digest, placement, this.dedupe.isIndexable(exchange.status, size));
      }
      // Redirects and errors too, so a refresh can tell an unchanged redirect from a new page. A 304 the
      // browser got for its own conditional request stands for nothing it could confirm: left out.
      if (exchange.status >= 200 && exchange.status !== 304) {
        const success = exchange.status < 300;
        // Pages keep their status line and headers: a later 304 revisit is written with them.
        const head = success && exchange.resourceType === "Document" ? { statusText: exchange.statusText, headers: storedResponseHeaders(exchange) } : {};
        const location = exchange.status >= 300 && exchange.status < 400 ? headerValue(exchange.responseHeaders, "location") : undefined;
        await this.noteCapture(exchange, placement.wacz, { date: warcDateToDigits(record.date), status: exchange.status, digest, ...head, ...(location ? { location } : {}) });
      }
      return { kind: original ? ("revisit" as const) : ("response" as const), record, request };
    });
  }

  /**
   * A body cut off mid-transfer, kept because retries did not get it whole: marked WARC-Truncated, and
   * never a dedupe original nor a capture a later refresh could confirm (it is not the full payload).
   */
  private async writeTruncated(exchange: Exchange): Promise<RecordOutcome> {
    const digest = await payloadDigest(exchange.body);
    const recordId = newRecordId();
    const [record, request] = await this.writer.writeRecords([responseRecord(exchange, recordId, digest), requestRecord(exchange, recordId)]);
    await this.dedupe.noteResponse(digest, { warcType: record.type, url: record.url, date: record.date, length: record.length, wacz: await this.waczOf(record.filename) }, false);
    return { kind: "response", record, request };
  }

  /** A 304 to our conditional request: a server-not-modified revisit pointing at the capture it confirms. */
  private async writeNotModified(exchange: Exchange, confirms: NonNullable<Exchange["confirms"]>): Promise<RecordOutcome> {
    const recordId = newRecordId();
    const head = confirms.headers ? notModifiedHead(exchange, { status: confirms.status, statusText: confirms.statusText, headers: confirms.headers }) : undefined;
    const [record, request] = await this.writer.writeRecords([
      revisitRecord(exchange, recordId, {
        url: confirms.url,
        date: digitsToWarcDate(confirms.date),
        digest: confirms.digest,
        waczFilename: confirms.waczFilename ?? undefined,
        profile: REVISIT_PROFILE_NOT_MODIFIED,
      }, head),
      requestRecord(exchange, recordId),
    ]);
    const wacz = await this.waczOf(record.filename);
    const original = await this.dedupe.findOriginal(confirms.digest);
    await this.dedupe.noteRevisit(
      { crawlId: confirms.crawlId, waczIndex: confirms.waczIndex, size: original?.size ?? record.length, url: confirms.url, date: confirms.date, waczFilename: confirms.waczFilename, waczFinished: true },
      { warcType: record.type, url: record.url, date: record.date, length: record.length, wacz },
    );
    await this.noteCapture(exchange, wacz, {
      date: warcDateToDigits(record.date),
      status: 304,
      digest: confirms.digest,
      original: { crawlId: confirms.crawlId, date: confirms.date, waczIndex: confirms.waczIndex },
      // What the next refresh's 304 revisit will be written with: the response as now validated.
      ...(head ? { statusText: confirms.statusText, headers: head.headers.filter(([n]) => n !== "x-orig-status") } : {}),
    });
    return { kind: "revisit", record, request };
  }

  private async noteCapture(exchange: Exchange, wacz: OwnWacz, capture: Omit<CaptureRecord, "waczIndex">): Promise<void> {
    const etag = headerValue(exchange.responseHeaders, "etag");
    const lastModified = headerValue(exchange.responseHeaders, "last-modified");
    if (wacz.index === null) {
      // The history lives in the dedupe Redis, which could not even register the WACZ just now.
      logger.warn("history", "capture not recorded in the history: dedupe index unavailable", { url: exchange.url });
      return;
    }
    try {
      await this.history.recordCapture(exchange.url, { ...capture, waczIndex: wacz.index, ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) });
    } catch (err) {
      logger.warn("history", "could not record the capture in the history", { url: exchange.url, error: errorMessage(err) });
    }
  }
}

/** GET and HEAD are told apart by URL alone; other methods (POST, PUT...) also by their request body. */
function requestBodyDigest(exchange: Exchange): string | undefined {
  if (exchange.method === "GET" || exchange.method === "HEAD") return undefined;
  return "sha256:" + createHash("sha256").update(exchange.postData ?? new Uint8Array(0)).digest("hex");
}

export function describeExchange(exchange: Exchange): Record<string, unknown> {
  return { url: exchange.url, status: exchange.status, size: bodySize(exchange.body), type: exchange.resourceType };
}
