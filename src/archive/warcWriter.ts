import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { open, rm, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { WARCRecord } from "warcio";
import { WARCSerializer } from "warcio/node";
import { filePayloadOf, gzippedFileRecord } from "./fileRecord.js";
import { gzippedRecord } from "./memoryRecord.js";
import { warcinfoRecord } from "./records.js";
import { timestampDigits } from "./warcDate.js";
import { AppendLog, type OpenLogFile, type SyncLog } from "../durable/appendLog.js";
import { writeFully } from "../durable/wholeFile.js";

/** Where one record landed: enough to index it and to point revisits and CDX lines at it. */
export interface WrittenRecord {
  filename: string;
  offset: number;
  length: number;
  recordId: string;
  type: string;
  date: string;
  url: string;
  payloadDigest: string | null;
}

export interface WarcWriterOptions {
  dir: string;
  /**
   * Awaited before each batch of records: resolves while this process may write, throws once it may
   * not (other processes took it for dead and may be repairing its files).
   */
  beforeWrite?: () => Promise<void>;
  /**
   * File names are `<prefix>-<YYYYMMDDhhmmssSSS>-<tag>.warc.gz`, opened exclusively: a name another
   * writer took first (same volume, same millisecond, same tag) gets a `-2`, `-3`... suffix instead.
   */
  filenamePrefix: string;
  /** Tells this writer's files apart from other writers' (default: random). */
  uniqueTag?: string;
  /** Clock for file names (tests force two writers onto the same millisecond). */
  now?: () => Date;
  rolloverSize: number;
  warcinfo: Record<string, string>;
  /** Bodies larger than this are buffered in a temp file while digesting, not in memory. */
  maxMemSize?: number;
  /** Written into the file's ".open" marker, so a repair can tell whether its writer is still alive. */
  owner: string;
  /** Awaited before the file's first record is written (e.g. to assign it to a WACZ). */
  onFileOpened?: (filename: string) => Promise<void>;
  onFileClosed?: (filename: string, size: number) => Promise<void>;
  /**
   * A file could not be closed cleanly (its sync, close or onFileClosed failed): one filled to the rollover
   * size, or one ended after a failed write or sync. The records a good sync covered stand (they are in the
   * file): told here, not to the caller of the write that filled it, who would otherwise release its claims
   * and write the records again elsewhere. (A batch no good sync covered fails its own write.)
   */
  onCloseFailed?: (filename: string, err: unknown) => void;
  /** Awaited after a file whose first record could not be written was removed (nothing of it remains). */
  onFileDiscarded?: (filename: string) => Promise<void>;
  /**
   * Records count as written only once they are on disk (fdatasync), so that nothing (a claim, a dedupe
   * original, a page list) says a record is stored that a host crash would take away. Batches written
   * while a sync runs share the next one (group commit: bench/durableWrites.ts). Default: on (see
   * durable/appendLog.ts).
   */
  durable?: boolean;
  /** How WARC files are opened (durable/appendLog.ts): tests inject short writes and failing or held syncs here. */
  openFile?: OpenLogFile;
  /** The power-loss test's sync log (durable/appendLog.ts). */
  syncLog?: SyncLog;
  /** Told that `filename` is on disk up to `upTo` bytes (after each sync, and once more as the file closes). */
  onSynced?: (filename: string, upTo: number) => void;
}

/**
 * Appends records to WARC files, each record one gzip member, a warcinfo record at the start of each
 * file, and a new file once the current one passes the rollover size. Writes are serialized so the
 * records of one exchange stay adjacent and offsets are exact. A file is an append log (durable/appendLog.ts):
 * a batch goes in whole or is cut off again, so the next record starts exactly where the recorded offsets say.
 * A file whose write or sync failed is ended (cut back to what its last good sync covered) and the next batch
 * goes into a new one: the batches no good sync covered are reported failed, never stored by a later sync.
 */
export class WarcWriter {
  private log: AppendLog | null = null;
  private marker: FileHandle | null = null;
  private filename = "";
  private readonly uniqueTag: string;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  readonly filesWritten: string[] = [];
  bytesWritten = 0;

  constructor(private readonly options: WarcWriterOptions) {
    mkdirSync(options.dir, { recursive: true });
    // Replicas in containers all run as pid 1: a random tag keeps their names apart on a shared volume.
    this.uniqueTag = options.uniqueTag ?? randomBytes(4).toString("hex");
  }

  /**
   * Write records back to back in the same file; resolves with where each one landed, once they are on disk.
   * `beforeAppend` learns the file they are about to go into and may refuse (throw): then nothing is written.
   */
  writeRecords(records: WARCRecord[], beforeAppend?: (filename: string) => Promise<void>): Promise<WrittenRecord[]> {
    const result = this.queue.then(() => this.writeNow(records, beforeAppend));
    this.queue = result.catch(() => undefined);
    // Synced outside the queue: the next batches are written while this sync runs, and share the next one.
    return result.then(async ({ written, log, end }) => {
      try {
        await log.synced(end);
      } catch (err) {
        this.queue = this.queue.then(() => (this.log === log ? this.endCurrent() : undefined));
        throw err;
      }
      return written;
    });
  }

  private async writeNow(records: WARCRecord[], beforeAppend?: (filename: string) => Promise<void>): Promise<{ written: WrittenRecord[]; log: AppendLog; end: number }> {
    if (this.closed) throw new Error("WARC writer is closed");
    await this.options.beforeWrite?.();
    if (this.log?.failed) await this.endCurrent();
    if (!this.log) await this.openNext();
    const log = this.log!;
    await beforeAppend?.(this.filename);
    const batchStart = log.size;
    const written: WrittenRecord[] = [];
    try {
      for (const record of records) written.push(await this.append(log, record));
      // Asked again once the batch is written: a process stopped (SIGSTOP) between its last check and the
      // write itself, and fenced meanwhile, wrote after the fence; it cuts that batch off before it counts.
      await this.options.beforeWrite?.();
      await this.markComplete(log.end);
      log.commit();
    } catch (err) {
      // The records of one exchange go in whole or not at all: drop those of this batch already written.
      await log.rollback();
      await this.markComplete(log.size).catch(() => undefined);
      if (log.failed) await this.endCurrent();
      throw err;
    }
    this.bytesWritten += log.size - batchStart;
    const end = log.size;
    if (end >= this.options.rolloverSize) await this.endCurrent();
    return { written, log, end };
  }

  private async openNext(): Promise<void> {
    const base = `${this.options.filenamePrefix}-${timestampDigits((this.options.now ?? (() => new Date()))())}-${this.uniqueTag}`;
    for (let n = 1; !this.log; n++) {
      const filename = n === 1 ? `${base}.warc.gz` : `${base}-${n}.warc.gz`;
      try {
        // "new" (O_EXCL): never append to (and so never corrupt) a file another writer has.
        this.log = await AppendLog.open(join(this.options.dir, filename), {
          create: "new",
          durable: this.options.durable,
          openFile: this.options.openFile,
          syncLog: this.options.syncLog,
          companions: [openMarkerName(filename)],
          onSynced: (upTo) => this.options.onSynced?.(filename, upTo),
        });
        this.filename = filename;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || n >= 1000) throw err;
      }
    }
    try {
      this.marker = await open(join(this.options.dir, openMarkerName(this.filename)), "w");
      await writeFully(this.marker, Buffer.from(`${"0".padStart(20, "0")}\n${this.options.owner}\n`), 0);
      // Before any of its records counts as written: a crash must keep the file, and its marker too (without
      // it, a file cut mid-record would be taken as closed and packaged as it is, not repaired).
      await this.log.syncEntry();
      await this.options.onFileOpened?.(this.filename);
      await this.append(this.log, warcinfoRecord(this.filename, this.options.warcinfo));
      await this.markComplete(this.log.end);
      this.bytesWritten += this.log.commit();
    } catch (err) {
      // A file without its warcinfo is no use: drop it, the next write opens a fresh one.
      await this.discardCurrent();
      throw err;
    }
    this.filesWritten.push(this.filename);
  }

  private async discardCurrent(): Promise<void> {
    const { log, marker, filename } = this;
    this.log = null;
    this.marker = null;
    await log?.close().catch(() => undefined);
    await marker?.close().catch(() => undefined);
    await rm(join(this.options.dir, filename), { force: true }).catch(() => undefined);
    await rm(join(this.options.dir, openMarkerName(filename)), { force: true }).catch(() => undefined);
    // If even this fails, packaging finds the file missing and says so (the crawl is not committed).
    await this.options.onFileDiscarded?.(filename)?.catch(() => undefined);
  }

  /** Record in the marker that the file is whole up to `size`: a repair cuts it back to this size. */
  private async markComplete(size: number, marker = this.marker): Promise<void> {
    if (marker) await writeFully(marker, Buffer.from(String(size).padStart(20, "0")), 0);
  }

  /** Write one record at the end of the file; a failure cuts the batch off (disk full or gone mid-record). */
  private async append(log: AppendLog, record: WARCRecord): Promise<WrittenRecord> {
    const offset = log.end;
    const payloadFile = filePayloadOf(record);
    const serializer = payloadFile ? gzippedFileRecord(record, payloadFile) : gzippedRecord(new WARCSerializer(record, { gzip: false, maxMemSize: this.options.maxMemSize ?? 4_000_000 }));
    const chunks: Uint8Array[] = [];
    let pending = 0;
    const write = async () => {
      // Asked before every write, not once per batch: a process stalled (SIGSTOP) between two records
      // of a batch, or mid-record, and taken for dead meanwhile must not write the rest when it resumes.
      await this.options.beforeWrite?.();
      await log.write(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, pending));
      chunks.length = 0;
      pending = 0;
    };
    for await (const chunk of serializer) {
      chunks.push(chunk);
      pending += chunk.length;
      if (pending >= 1 << 20) await write();
    }
    if (chunks.length) await write();
    const headers = record.warcHeaders.headers;
    return {
      filename: this.filename,
      offset,
      length: log.end - offset,
      recordId: headers.get("WARC-Record-ID") ?? "",
      type: headers.get("WARC-Type") ?? "",
      date: headers.get("WARC-Date") ?? "",
      url: headers.get("WARC-Target-URI") ?? "",
      payloadDigest: headers.get("WARC-Payload-Digest") ?? null,
    };
  }

  /** End the current file; a failure is told to onCloseFailed (its records up to its size stand). */
  private async endCurrent(): Promise<void> {
    const filename = this.filename;
    await this.closeCurrent().catch((err: unknown) => this.options.onCloseFailed?.(filename, err));
  }

  /**
   * Close the current file: synced, closed, its marker removed, onFileClosed told. Whatever fails, the
   * handles are closed and onFileClosed runs (the file holds whole records up to its size); then the first
   * failure is thrown. A file that could not be synced keeps its marker: a repair checks it.
   */
  private async closeCurrent(): Promise<void> {
    const { log, marker, filename } = this;
    if (!log) return;
    this.log = null;
    this.marker = null;
    let failure: unknown = null;
    const noting = (err: unknown) => void (failure ??= err);
    const before = log.size;
    await log.close().catch(noting);
    // After a failed sync the file was cut back to what the last good one covered: those bytes are gone.
    this.bytesWritten -= before - log.size;
    if (log.size !== before) await this.markComplete(log.size, marker).catch(noting);
    await marker?.close().catch(noting);
    if (!failure) await rm(join(this.options.dir, openMarkerName(filename)), { force: true }).catch(noting);
    await this.options.onFileClosed?.(filename, log.size)?.catch(noting);
    if (failure) throw failure;
  }

  /** Finish pending writes and close the current file. */
  async close(): Promise<void> {
    await this.queue;
    this.closed = true;
    await this.closeCurrent();
  }
}

/** A WARC file being written has a marker beside it: `<name>.open`, holding the whole size and the writer. */
export function openMarkerName(warcFilename: string): string {
  return `${warcFilename}.open`;
}


