import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import { payloadDigest } from "../archive/digest.js";
import { bodySize, headerValue, type ConfirmedCapture, type Exchange } from "../archive/exchange.js";
import { storedResponseHeaders } from "../archive/httpHeaders.js";
import {
  newRecordId, notModifiedHead, requestRecord, responseRecord, revisitRecord, REVISIT_PROFILE_IDENTICAL, REVISIT_PROFILE_NOT_MODIFIED, type RevisitTarget,
} from "../archive/records.js";
import type { WarcWriter, WrittenRecord } from "../archive/warcWriter.js";
import type { CaptureHistory } from "../dedupe/captureHistory.js";
import type { OriginalCapture } from "../dedupe/dedupeIndex.js";
import type { Deduplicator, RecordPlacement } from "../dedupe/deduplicator.js";
import type { DependencyTracker, OwnWacz } from "../dedupe/dependencies.js";
import { digitsToWarcDate, warcDateToDigits, type CaptureRecord } from "../dedupe/keys.js";
import { errorMessage, logger } from "../log/logger.js";
import type { ExchangeClaims, ExchangeIdentity } from "../state/exchangeClaims.js";
import { isStorageError, storageErrorMessage } from "../util/storageErrors.js";
import type { ExchangeSink, StoreOutcome } from "./exchangeSink.js";
import type { WaczPlan } from "./waczPlan.js";

/** The parts each step of the pipeline uses; assembled by openCapturePipeline (openPipeline.ts). */
export interface PipelineStages {
  claims: ExchangeClaims;
  dedupe: Deduplicator;
  writer: WarcWriter;
  plan: WaczPlan;
  dependencies: DependencyTracker;
  history: CaptureHistory;
  /** Nothing more can be written (disk full...): the crawl stops. */
  stop: { fatal(message: string, cause?: unknown): void };
  archiveDir: string;
}

/**
 * What happens to one captured exchange, in order:
 *   1. claim     an exchange (status, method, URL) is stored once per crawl     state/exchangeClaims.ts
 *   2. decide    response, or revisit of a payload archived already           dedupe/deduplicator.ts
 *   3. records   the WARC records of that decision                            archive/records.ts
 *   4. write     appended to this writer's WARC, in the WACZ it goes into     archive/warcWriter.ts, waczPlan.ts
 *   5. index     the dedupe index learns the new original or the revisit      dedupe/deduplicator.ts
 *   6. depend    a revisit's WACZ will require the WACZ of its original       dedupe/dependencies.ts
 *   7. history   the URL's capture history, for --refresh and `history`       dedupe/captureHistory.ts
 * Exchanges that are no capture (a 206 fragment, the browser's own 304) are skipped; a body cut off
 * mid-transfer is written marked WARC-Truncated, claims nothing and is no dedupe original.
 */
export class CapturePipeline implements ExchangeSink {
  constructor(private readonly stages: PipelineStages) {}

  async store(exchange: Exchange): Promise<StoreOutcome> {
    try {
      const outcome = await this.claimAndWrite(exchange);
      if (outcome.kind !== "skipped") logger.debug("writer", `${outcome.kind} stored`, describeExchange(exchange));
      return outcome;
    } catch (err) {
      if (isStorageError(err)) this.stages.stop.fatal(`cannot write to ${this.stages.archiveDir}: ${storageErrorMessage(err)}`, err);
      throw err;
    } finally {
      if (exchange.body.kind === "file") await rm(exchange.body.path, { force: true });
    }
  }

  async hasStoredResponse(url: string): Promise<boolean> {
    return this.stages.claims.isStored({ status: 200, method: "GET", url }).catch(() => false);
  }

  private async claimAndWrite(exchange: Exchange): Promise<StoreOutcome> {
    // A 206 body is a fragment: storing it as the resource would be wrong (the full body is fetched instead).
    if (exchange.status === 206) return { kind: "skipped", reason: "partial-content" };
    // A 304 to the browser's own revalidation is not the resource (and has no body): only a 304 to a
    // conditional request the crawler made confirms an archived capture.
    if (exchange.status === 304 && !exchange.confirms) return { kind: "skipped", reason: "browser-revalidation" };
    if (exchange.truncated) return this.writeTruncated(exchange);

    const claim = exchangeIdentity(exchange);
    if (!(await this.stages.claims.claim(claim))) return { kind: "skipped", reason: "already-stored" };
    try {
      const outcome = exchange.status === 304 && exchange.confirms ? await this.writeNotModified(exchange, exchange.confirms) : await this.write(exchange);
      await this.stages.claims.confirm(claim);
      return outcome;
    } catch (err) {
      await this.stages.claims.unclaim(claim).catch(() => undefined);
      throw err;
    }
  }

  private async write(exchange: Exchange): Promise<StoreOutcome> {
    const { dedupe, writer } = this.stages;
    const digest = await payloadDigest(exchange.body);
    const size = bodySize(exchange.body);
    // One exchange of a digest at a time in this process: the second of two identical payloads sees the first.
    return dedupe.withDigestLock(digest, async () => {
      const decision = await dedupe.decide(digest, exchange.status, size);
      const recordId = newRecordId();
      const main = decision.kind === "revisit"
        ? revisitRecord(exchange, recordId, {
            url: decision.original.url,
            date: digitsToWarcDate(decision.original.date),
            digest,
            waczFilename: decision.original.waczFilename ?? undefined,
            profile: REVISIT_PROFILE_IDENTICAL,
          })
        : responseRecord(exchange, recordId, digest);
      const [record, request] = await writer.writeRecords([main, requestRecord(exchange, recordId)]);
      const placement = await this.placementOf(record);
      if (decision.kind === "revisit") await this.indexRevisit(decision.original, placement);
      else await dedupe.noteResponse(digest, placement, decision.indexable);
      await this.recordHistory(exchange, record, digest, placement.wacz);
      return { kind: decision.kind, record, request };
    });
  }

  /**
   * A body cut off mid-transfer, kept because retries did not get it whole: marked WARC-Truncated, and
   * never a dedupe original nor a capture a later refresh could confirm (it is not the full payload).
   */
  private async writeTruncated(exchange: Exchange): Promise<StoreOutcome> {
    const digest = await payloadDigest(exchange.body);
    const recordId = newRecordId();
    const [record, request] = await this.stages.writer.writeRecords([responseRecord(exchange, recordId, digest), requestRecord(exchange, recordId)]);
    await this.stages.dedupe.noteResponse(digest, await this.placementOf(record), false);
    return { kind: "response", record, request };
  }

  /** A 304 to our conditional request: a server-not-modified revisit pointing at the capture it confirms. */
  private async writeNotModified(exchange: Exchange, confirms: ConfirmedCapture): Promise<StoreOutcome> {
    const recordId = newRecordId();
    const head = confirms.headers ? notModifiedHead(exchange, { status: confirms.status, statusText: confirms.statusText, headers: confirms.headers }) : undefined;
    const target: RevisitTarget = { url: confirms.url, date: digitsToWarcDate(confirms.date), digest: confirms.digest, waczFilename: confirms.waczFilename ?? undefined, profile: REVISIT_PROFILE_NOT_MODIFIED };
    const [record, request] = await this.stages.writer.writeRecords([revisitRecord(exchange, recordId, target, head), requestRecord(exchange, recordId)]);
    const placement = await this.placementOf(record);
    const original = await this.stages.dedupe.findOriginal(confirms.digest);
    await this.indexRevisit(
      { crawlId: confirms.crawlId, waczIndex: confirms.waczIndex, size: original?.size ?? record.length, url: confirms.url, date: confirms.date, waczFilename: confirms.waczFilename, waczFinished: true },
      placement,
    );
    await this.noteCapture(exchange, placement.wacz, {
      date: warcDateToDigits(record.date),
      status: 304,
      digest: confirms.digest,
      original: { crawlId: confirms.crawlId, date: confirms.date, waczIndex: confirms.waczIndex },
      // What the next refresh's 304 revisit will be written with: the response as now validated.
      ...(head ? { statusText: confirms.statusText, headers: head.headers.filter(([n]) => n !== "x-orig-status") } : {}),
    });
    return { kind: "revisit", record, request };
  }

  /** Where a written record is, as the index needs it: its WACZ (with its index in c:<crawlId>:wacz when registered). */
  private async placementOf(record: WrittenRecord): Promise<RecordPlacement> {
    return { warcType: record.type, url: record.url, date: record.date, length: record.length, wacz: await this.stages.plan.waczOf(record.filename) };
  }

  /** Index notes of a revisit (counts) and the dependency of its WACZ on the original's. */
  private async indexRevisit(original: OriginalCapture, revisit: RecordPlacement): Promise<void> {
    await this.stages.dedupe.noteRevisit(original, revisit);
    await this.stages.dependencies.record(original.crawlId, original.waczIndex, revisit.wacz);
  }

  /**
   * Redirects and errors go into the history too, so a refresh can tell an unchanged redirect from a
   * new page. A 304 the browser got for its own conditional request stands for nothing it could confirm.
   */
  private async recordHistory(exchange: Exchange, record: WrittenRecord, digest: string, wacz: OwnWacz): Promise<void> {
    if (exchange.status < 200 || exchange.status === 304) return;
    const success = exchange.status < 300;
    // Pages keep their status line and headers: a later 304 revisit is written with them.
    const head = success && exchange.resourceType === "Document" ? { statusText: exchange.statusText, headers: storedResponseHeaders(exchange) } : {};
    const location = exchange.status >= 300 && exchange.status < 400 ? headerValue(exchange.responseHeaders, "location") : undefined;
    await this.noteCapture(exchange, wacz, { date: warcDateToDigits(record.date), status: exchange.status, digest, ...head, ...(location ? { location } : {}) });
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
      await this.stages.history.recordCapture(exchange.url, { ...capture, waczIndex: wacz.index, ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) });
    } catch (err) {
      logger.warn("history", "could not record the capture in the history", { url: exchange.url, error: errorMessage(err) });
    }
  }
}

/** GET and HEAD are told apart by URL alone; other methods (POST, PUT...) also by their request body. */
function exchangeIdentity(exchange: Exchange): ExchangeIdentity {
  const identity = { status: exchange.status, method: exchange.method, url: exchange.url };
  if (exchange.method === "GET" || exchange.method === "HEAD") return identity;
  return { ...identity, requestDigest: "sha256:" + createHash("sha256").update(exchange.postData ?? new Uint8Array(0)).digest("hex") };
}

export function describeExchange(exchange: Exchange): Record<string, unknown> {
  return { url: exchange.url, status: exchange.status, size: bodySize(exchange.body), type: exchange.resourceType };
}
