import { rm } from "node:fs/promises";
import type { Deduplicator } from "../dedupe/deduplicator.js";
import { bodySize, headerValue, type Exchange } from "./exchange.js";
import { payloadDigest } from "./digest.js";
import { newRecordId, notModifiedHead, requestRecord, responseRecord, revisitRecord, REVISIT_PROFILE_IDENTICAL, REVISIT_PROFILE_NOT_MODIFIED } from "./records.js";
import { storedResponseHeaders } from "./httpHeaders.js";
import type { CaptureHistory } from "../history/captureHistory.js";
import { digitsToWarcDate, warcDateToDigits, type CaptureRecord } from "../dedupe/keys.js";
import { errorMessage, logger } from "../log/logger.js";
import type { WarcWriter, WrittenRecord } from "./warcWriter.js";

/** Answers "was this exchange stored already in this crawl?" (shared across processes via Redis). */
export interface ExchangeClaims {
  claimExchange(status: number, method: string, url: string): Promise<boolean>;
  confirmExchange(status: number, method: string, url: string): Promise<void>;
  unclaimExchange(status: number, method: string, url: string): Promise<void>;
}

export type RecordOutcome =
  | { kind: "response" | "revisit"; record: WrittenRecord; request: WrittenRecord }
  | { kind: "skipped"; reason: "already-stored" | "partial-content" };

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
    /** Index in c:<crawlId>:wacz of the WACZ a WARC file is packaged into. */
    private readonly waczIndexOf: (warcFilename: string) => number,
    private readonly history: CaptureHistory,
  ) {}

  async record(exchange: Exchange): Promise<RecordOutcome> {
    try {
      // A 206 body is a fragment: storing it as the resource would be wrong. Callers may fetch the full body.
      if (exchange.status === 206) return { kind: "skipped", reason: "partial-content" };
      if (!(await this.claims.claimExchange(exchange.status, exchange.method, exchange.url))) {
        return { kind: "skipped", reason: "already-stored" };
      }
      try {
        const outcome = await this.write(exchange);
        await this.claims.confirmExchange(exchange.status, exchange.method, exchange.url);
        return outcome;
      } catch (err) {
        await this.claims.unclaimExchange(exchange.status, exchange.method, exchange.url).catch(() => undefined);
        throw err;
      }
    } finally {
      if (exchange.body.kind === "file") await rm(exchange.body.path, { force: true });
    }
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
      const placement = { warcType: record.type, url: record.url, date: record.date, length: record.length, waczIndex: this.waczIndexOf(record.filename) };
      if (original) {
        await this.dedupe.noteRevisit(original, placement);
      } else {
        await this.dedupe.noteResponse(digest, placement, this.dedupe.isIndexable(exchange.status, size));
      }
      if (exchange.status >= 200 && exchange.status < 300 && exchange.status !== 206) {
        // Pages keep their status line and headers: a later 304 revisit is written with them.
        const head = exchange.resourceType === "Document" ? { statusText: exchange.statusText, headers: storedResponseHeaders(exchange) } : {};
        await this.noteCapture(exchange, { date: warcDateToDigits(record.date), status: exchange.status, digest, waczIndex: placement.waczIndex, ...head });
      }
      return { kind: original ? ("revisit" as const) : ("response" as const), record, request };
    });
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
    const waczIndex = this.waczIndexOf(record.filename);
    const original = await this.dedupe.findOriginal(confirms.digest);
    await this.dedupe.noteRevisit(
      { crawlId: confirms.crawlId, waczIndex: confirms.waczIndex, size: original?.size ?? record.length, url: confirms.url, date: confirms.date, waczFilename: confirms.waczFilename },
      { warcType: record.type, url: record.url, date: record.date, length: record.length, waczIndex },
    );
    await this.noteCapture(exchange, {
      date: warcDateToDigits(record.date),
      status: 304,
      digest: confirms.digest,
      waczIndex,
      original: { crawlId: confirms.crawlId, date: confirms.date, waczIndex: confirms.waczIndex },
      // What the next refresh's 304 revisit will be written with: the response as now validated.
      ...(head ? { statusText: confirms.statusText, headers: head.headers.filter(([n]) => n !== "x-orig-status") } : {}),
    });
    return { kind: "revisit", record, request };
  }

  private async noteCapture(exchange: Exchange, capture: CaptureRecord): Promise<void> {
    const etag = headerValue(exchange.responseHeaders, "etag");
    const lastModified = headerValue(exchange.responseHeaders, "last-modified");
    try {
      await this.history.recordCapture(exchange.url, { ...capture, ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) });
    } catch (err) {
      logger.warn("history", "could not record the capture in the history", { url: exchange.url, error: errorMessage(err) });
    }
  }
}

export function describeExchange(exchange: Exchange): Record<string, unknown> {
  return { url: exchange.url, status: exchange.status, size: bodySize(exchange.body), type: exchange.resourceType };
}
