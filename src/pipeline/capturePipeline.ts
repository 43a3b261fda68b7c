import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { payloadDigest } from "../archive/digest.js";
import { bodySize, headerValue, type ConfirmedCapture, type Exchange, type ExchangeBody, type WebSocketCapture } from "../archive/exchange.js";
import { storedResponseHeaders } from "../archive/httpHeaders.js";
import {
  newRecordId, notModifiedHead, originalResponseRecord, requestRecord, responseRecord, revisitRecord, REVISIT_PROFILE_IDENTICAL, REVISIT_PROFILE_NOT_MODIFIED, webSocketRecords, type RevisitTarget,
} from "../archive/records.js";
import type { WarcWriter, WrittenRecord } from "../archive/warcWriter.js";
import type { CaptureHistory } from "../dedupe/captureHistory.js";
import type { OriginalCapture } from "../dedupe/dedupeIndex.js";
import type { Deduplicator, RecordPlacement } from "../dedupe/deduplicator.js";
import type { DependencyTracker } from "../dedupe/dependencies.js";
import type { NoteBacklog } from "../dedupe/notes/noteBacklog.js";
import { historyNote, responseNote, revisitNote } from "../dedupe/notes/indexNotes.js";
import { digitsToWarcDate, warcDateToDigits } from "../archive/warcDate.js";
import type { CaptureRecord } from "../dedupe/indexKeys.js";
import { errorMessage, logger } from "../log/logger.js";
import type { ClaimResult, ExchangeClaims, ExchangeIdentity } from "../state/exchangeClaims.js";
import { isStorageError, storageErrorMessage } from "../util/storageErrors.js";
import { pauseForTests } from "../util/testSeams.js";
import type { ExchangeSink, StoreOutcome } from "./exchangeSink.js";
import type { WaczPlan } from "./waczPlan.js";

/** How long an exchange another tab or process is writing is waited for before it is stored here too (a large body takes seconds). */
const PENDING_CLAIM_WAIT_MS = 60_000;
const PENDING_CLAIM_POLL_MS = 50;

/** Answers a refetch would not change (storedFinalStatus), the full response first. */
const FINAL_STATUSES = [200, 404, 410];

/** A written record as the index notes need it, with its WARC file (whose WACZ is resolved when a note is written). */
type WrittenPlacement = Omit<RecordPlacement, "wacz"> & { filename: string; recordId: string };

/** Records written for an exchange (its WACZ is added by writeOutcome). */
type WrittenOutcome = { kind: "response" | "revisit"; record: WrittenRecord; request: WrittenRecord };

/** The parts each step of the pipeline uses; assembled by openCapturePipeline (openPipeline.ts). */
export interface PipelineStages {
  claims: ExchangeClaims;
  dedupe: Deduplicator;
  writer: WarcWriter;
  plan: WaczPlan;
  dependencies: DependencyTracker;
  history: CaptureHistory;
  /** Index notes the dedupe index could not take yet, retried until it does (packaging waits for them). */
  notes: NoteBacklog;
  /** Nothing more can be written (disk full...): the crawl stops. */
  stop: { fatal(message: string, cause?: unknown): void };
  archiveDir: string;
  /** Told of each revisit written (the metrics, --metricsPort); null: nobody asks. */
  events?: PipelineEvents | null;
}

/** What the pipeline reports as it writes. */
export interface PipelineEvents {
  /** A revisit record was written: `conservedBytes`, its original's size minus its own (what dedupe saved). */
  revisitWritten(conservedBytes: number): void;
}

/**
 * What happens to one captured exchange, in order:
 *   1. claim     an exchange (status, method, URL) is stored once per crawl     state/exchangeClaims.ts
 *   2. decide    response, or revisit of a payload archived already           dedupe/deduplicator.ts
 *   3. records   the WARC records of that decision                            archive/records.ts
 *   4. write     appended to this writer's WARC, in the WACZ it goes into     archive/warcWriter.ts, waczPlan.ts
 *   5. depend    a revisit's WACZ will require the WACZ of its original       dedupe/dependencies.ts
 *                (recorded before the revisit is written: no revisit without its dependency)
 *   6. index     the dedupe index learns the new original or the revisit      dedupe/deduplicator.ts
 *   7. history   the URL's capture history, for --refresh and `history`       dedupe/captureHistory.ts
 *                (6 and 7 go through the NoteBacklog: retried until the index answers)
 * Exchanges that are no capture (a 206 fragment, the browser's own 304) are skipped; a body cut off
 * mid-transfer is written marked WARC-Truncated, claims nothing and is no dedupe original; one cut
 * short on purpose (size cap, endless stream) is marked too and no dedupe original, but claims its URL.
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

  /** A WebSocket: its frames and handshake records, in one batch, outside claims and dedupe (like a page's text). */
  async storeWebSocket(socket: WebSocketCapture): Promise<number> {
    try {
      const written = await this.stages.writer.writeRecords(webSocketRecords(socket));
      logger.debug("writer", "websocket stored", { url: socket.url, bytes: socket.frames.length });
      return written.reduce((sum, record) => sum + record.length, 0);
    } catch (err) {
      if (isStorageError(err)) this.stages.stop.fatal(`cannot write to ${this.stages.archiveDir}: ${storageErrorMessage(err)}`, err);
      throw err;
    }
  }

  async hasStoredResponse(url: string): Promise<boolean> {
    return this.stages.claims.isStored({ status: 200, method: "GET", url }).catch(() => false);
  }

  async storedFinalStatus(url: string): Promise<number | null> {
    return this.stages.claims.storedStatus("GET", url, FINAL_STATUSES).catch(() => null);
  }

  canListPageIn(wacz: string): Promise<boolean> {
    return this.isListableHere(wacz);
  }

  async isArchivedPayload(body: ExchangeBody, status: number): Promise<boolean> {
    const { dedupe } = this.stages;
    if (!dedupe.isEligible(status, bodySize(body))) return false;
    return (await dedupe.findOriginal(await payloadDigest(body))) !== null;
  }

  private async claimAndWrite(exchange: Exchange): Promise<StoreOutcome> {
    // A 206 body is a fragment: storing it as the resource would be wrong (the full body is fetched instead).
    if (exchange.status === 206) return { kind: "skipped", reason: "partial-content", wacz: null };
    // A 304 to the browser's own revalidation is not the resource (and has no body): only a 304 to a
    // conditional request the crawler made confirms an archived capture.
    if (exchange.status === 304 && !exchange.confirms) return { kind: "skipped", reason: "browser-revalidation", wacz: null };
    // Cut off by the network: a later capture may get it whole, so it claims nothing.
    if (exchange.truncated === "disconnect") return this.writeTruncated(exchange);

    const claim = exchangeIdentity(exchange);
    const claimed = await this.settledClaim(claim);
    if (claimed === null) {
      // Still being written by a live process after a long wait: stored here too (twice at worst, never lost).
      logger.debug("writer", "exchange still being written elsewhere; stored here too", { url: exchange.url });
      return this.writeOutcome(exchange);
    }
    if (!claimed.claimed) {
      // Stored already. A page is listed in the WACZ holding its document, and that must be one of
      // this writer's own still open (a page taken over from a stalled process whose WACZ has it, say,
      // could not be resolved from ours): then the document is stored here too.
      if (!exchange.pageDocument || (await this.isListableHere(claimed.storedIn))) return { kind: "skipped", reason: "already-stored", wacz: claimed.storedIn };
      logger.debug("writer", "page document stored elsewhere; stored again in this writer's WACZ", { url: exchange.url, storedIn: claimed.storedIn });
      return this.writeOutcome(exchange);
    }
    try {
      const outcome = await this.writeOutcome(exchange);
      await this.stages.claims.confirm(claim, outcome.wacz);
      return outcome;
    } catch (err) {
      await this.stages.claims.unclaim(claim).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The exchange's claim once no write of it is under way: another tab or process writing it now does not
   * mean it is stored (its write may fail and release the claim, and then it is this one's to store).
   * Null when it is still being written after PENDING_CLAIM_WAIT_MS.
   */
  private async settledClaim(claim: ExchangeIdentity): Promise<ClaimResult | null> {
    const deadline = Date.now() + PENDING_CLAIM_WAIT_MS;
    for (;;) {
      const claimed = await this.stages.claims.claim(claim);
      if (claimed.claimed || !claimed.pending) return claimed;
      if (Date.now() >= deadline) return null;
      await new Promise((resolve) => setTimeout(resolve, PENDING_CLAIM_POLL_MS));
    }
  }

  private async writeOutcome(exchange: Exchange): Promise<StoreOutcome & { wacz: string }> {
    // Cut short on purpose (size cap, a never-ending stream): no later capture would do better, so it
    // claims its URL (a 3 GB video on every page is fetched once), but is still no dedupe original.
    if (exchange.truncated) return this.writeTruncated(exchange);
    const written = exchange.status === 304 && exchange.confirms ? await this.writeNotModified(exchange, exchange.confirms) : await this.write(exchange);
    return { ...written, ...this.whereWritten(written.record) };
  }

  /** The WACZ a written record goes into, and its WARC file's path. */
  private whereWritten(record: WrittenRecord): { wacz: string; path: string } {
    return { wacz: this.stages.plan.waczFilenameOf(record.filename), path: join(this.stages.archiveDir, record.filename) };
  }

  /** A WACZ this writer packages and has not packaged yet: a page can still be listed in it. */
  private async isListableHere(wacz: string | null): Promise<boolean> {
    return wacz !== null && (await this.stages.plan.isOwnWacz(wacz)) && !(await this.stages.plan.isSealed(wacz));
  }

  private async write(exchange: Exchange): Promise<WrittenOutcome> {
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
      const dependsOn = decision.kind === "revisit" ? decision.original : null;
      // A manifest stored rewritten keeps the server's bytes beside it (archive/records.ts originalResponseRecord).
      const original = exchange.originalBody ? [originalResponseRecord({ ...exchange, originalBody: exchange.originalBody }, recordId)] : [];
      const [record, request] = await writer.writeRecords([main, requestRecord(exchange, recordId), ...original], (file) => this.recordDependency(dependsOn, file));
      const placement = this.placementOf(record);
      // Tests kill the crawler here: a record in the WARC that no note tells the index of (recordNotes.ts).
      await pauseForTests("record-written");
      if (decision.kind === "revisit") await this.noteRevisit(decision.original, placement);
      else await this.noteResponse(digest, placement, decision.indexable);
      await this.recordHistory(exchange, record, digest, dependsOn);
      return { kind: decision.kind, record, request };
    });
  }

  /**
   * A body cut off mid-transfer, kept because retries did not get it whole: marked WARC-Truncated, and
   * never a dedupe original nor a capture a later refresh could confirm (it is not the full payload).
   */
  private async writeTruncated(exchange: Exchange): Promise<StoreOutcome & { wacz: string }> {
    const digest = await payloadDigest(exchange.body);
    const recordId = newRecordId();
    const [record, request] = await this.stages.writer.writeRecords([responseRecord(exchange, recordId, digest), requestRecord(exchange, recordId)]);
    await this.noteResponse(digest, this.placementOf(record), false);
    return { kind: "response", record, request, ...this.whereWritten(record) };
  }

  /**
   * A 304 to our conditional request: a server-not-modified revisit naming the response record that holds
   * the payload it confirms (the confirmed capture's own, or the one that capture was a revisit of).
   */
  private async writeNotModified(exchange: Exchange, confirms: ConfirmedCapture): Promise<WrittenOutcome> {
    const recordId = newRecordId();
    const head = confirms.headers ? notModifiedHead(exchange, { status: confirms.status, statusText: confirms.statusText, headers: confirms.headers }) : undefined;
    const target: RevisitTarget = { url: confirms.url, date: digitsToWarcDate(confirms.date), digest: confirms.digest, waczFilename: confirms.waczFilename ?? undefined, profile: REVISIT_PROFILE_NOT_MODIFIED };
    const original = await this.stages.dedupe.findOriginal(confirms.digest);
    const confirmed: OriginalCapture = {
      crawlId: confirms.crawlId, waczIndex: confirms.waczIndex, size: original?.size ?? 0, url: confirms.url, date: confirms.date, waczFilename: confirms.waczFilename, waczFinished: true,
    };
    const [record, request] = await this.stages.writer.writeRecords(
      [revisitRecord(exchange, recordId, target, head), requestRecord(exchange, recordId)], (file) => this.recordDependency(confirmed, file),
    );
    await this.noteRevisit(original ? confirmed : { ...confirmed, size: record.length }, this.placementOf(record));
    await this.noteCapture(exchange, record.filename, {
      date: warcDateToDigits(record.date),
      status: 304,
      digest: confirms.digest,
      original: { crawlId: confirms.crawlId, date: confirms.date, waczIndex: confirms.waczIndex, url: confirms.url },
      // What the next refresh's 304 revisit will be written with: the response as now validated.
      ...(head ? { statusText: confirms.statusText, headers: head.headers.filter(([n]) => n !== "x-orig-status") } : {}),
    });
    return { kind: "revisit", record, request };
  }

  /** Where a written record is, as the index needs it (its WACZ's index is resolved when a note is written). */
  private placementOf(record: WrittenRecord): WrittenPlacement {
    return { warcType: record.type, url: record.url, date: record.date, length: record.length, filename: record.filename, recordId: record.recordId };
  }

  /**
   * A revisit about to be written into `warcFilename` depends on its original's WACZ: recorded first,
   * and if it cannot be, the revisit is not written (the store fails, its claim is released).
   */
  private async recordDependency(original: OriginalCapture | null, warcFilename: string): Promise<void> {
    if (!original) return;
    await this.stages.dependencies.record(original.crawlId, original.waczIndex, await this.stages.plan.waczOf(warcFilename));
  }

  private async noteResponse(digest: string, placement: WrittenPlacement, indexable: boolean): Promise<void> {
    await this.stages.notes.write(responseNote(digest, placement, this.stages.plan.waczFilenameOf(placement.filename), indexable));
  }

  private async noteRevisit(original: OriginalCapture, placement: WrittenPlacement): Promise<void> {
    this.stages.events?.revisitWritten(original.size - placement.length);
    await this.stages.notes.write(revisitNote(placement, original.size));
  }

  /**
   * Redirects and errors go into the history too, so a refresh can tell an unchanged redirect from a
   * new page. A 304 the browser got for its own conditional request stands for nothing it could confirm.
   * A revisit keeps the response it names (`revisitOf`): a later 304 revisit names that response too.
   */
  private async recordHistory(exchange: Exchange, record: WrittenRecord, digest: string, revisitOf: OriginalCapture | null): Promise<void> {
    if (exchange.status < 200 || exchange.status === 304) return;
    const success = exchange.status < 300;
    // Pages keep their status line and headers: a later 304 revisit is written with them.
    const head = success && exchange.resourceType === "Document" ? { statusText: exchange.statusText, headers: storedResponseHeaders(exchange) } : {};
    const location = exchange.status >= 300 && exchange.status < 400 ? headerValue(exchange.responseHeaders, "location") : undefined;
    const original = revisitOf ? { original: { crawlId: revisitOf.crawlId, date: revisitOf.date, waczIndex: revisitOf.waczIndex, url: revisitOf.url } } : {};
    await this.noteCapture(exchange, record.filename, { date: warcDateToDigits(record.date), status: exchange.status, digest, ...head, ...(location ? { location } : {}), ...original });
  }

  /** The capture history lives in the dedupe Redis: while it is away, the note waits in the backlog. */
  private async noteCapture(exchange: Exchange, warcFilename: string, capture: Omit<CaptureRecord, "waczIndex">): Promise<void> {
    const etag = headerValue(exchange.responseHeaders, "etag");
    const lastModified = headerValue(exchange.responseHeaders, "last-modified");
    const url = exchange.url;
    const wacz = this.stages.plan.waczFilenameOf(warcFilename);
    await this.stages.notes.write(historyNote(url, wacz, { ...capture, ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) }));
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
