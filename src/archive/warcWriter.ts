import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { open, rm, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { WARCRecord } from "warcio";
import { WARCSerializer } from "warcio/node";
import { filePayloadOf, gzippedFileRecord } from "./fileRecord.js";
import { warcinfoRecord } from "./records.js";
import { timestampDigits } from "./warcDate.js";
import { syncDirectory } from "../durable/syncDirectory.js";

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
   * A file filled to the rollover size could not be closed cleanly (its sync, close or onFileClosed failed).
   * The write that filled it succeeded and stands (its records are in the file): told here, not to that
   * write's caller, who would otherwise release its claims and write the records again elsewhere.
   */
  onCloseFailed?: (filename: string, err: unknown) => void;
  /** Awaited after a file whose first record could not be written was removed (nothing of it remains). */
  onFileDiscarded?: (filename: string) => Promise<void>;
  /**
   * Records count as written only once they are on disk (fdatasync), so that nothing (a claim, a dedupe
   * original, a page list) says a record is stored that a host crash would take away. Batches written
   * while a sync runs share the next one (group commit: bench/durableWrites.ts). Default on.
   */
  durable?: boolean;
  /** How bytes reach the file; tests inject short writes here. */
  writeAt?: WriteAt;
  /** How a file is synced (fdatasync); tests and the benchmark count or hold syncs here. */
  syncFile?: (handle: FileHandle) => Promise<void>;
  /**
   * Told that `filename` is on disk up to `upTo` bytes (after each sync, and once more as the file closes),
   * before any write that sync covers counts as written: the power-loss test cuts files back to this.
   */
  onSynced?: (filename: string, upTo: number) => void;
  /** Told that a new file's name (the WARC file's, its `.open` marker's) is on disk: its folder was synced. */
  onEntrySynced?: (filename: string) => void;
}

/** Write `chunks` at byte `position` of the file; resolves with how many bytes were really written. */
export type WriteAt = (handle: FileHandle, chunks: Uint8Array[], position: number) => Promise<number>;

const writevAt: WriteAt = async (handle, chunks, position) => (await handle.writev(chunks, position)).bytesWritten;

/**
 * Appends records to WARC files, each record one gzip member, a warcinfo record at the start of each
 * file, and a new file once the current one passes the rollover size. Writes are serialized so the
 * records of one exchange stay adjacent and offsets are exact. Every write is positional at `size`, the
 * end of the last whole record: a write that fails or comes up short is cut off again, so the next
 * record starts exactly where the recorded offsets say.
 */
export class WarcWriter {
  private handle: FileHandle | null = null;
  private marker: FileHandle | null = null;
  private filename = "";
  /** End of the last whole record: where the next record is written. */
  private size = 0;
  /** End of the last whole batch (what the `.open` marker says): a sync vouches for no part of a batch. */
  private wholeSize = 0;
  /** How far the current file is known to be on disk, and the sync under way (see synced()). */
  private syncedUpTo = 0;
  private syncing: Promise<void> | null = null;
  /** Counts cut-backs of the current file: a sync begun before one cannot vouch for what was written after. */
  private cuts = 0;
  /** Bytes past `size` may be on disk (a failed write whose truncate failed too): cut them first. */
  private dirtyTail = false;
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
   * Write records back to back in the same file; resolves with where each one landed. `beforeAppend`
   * learns the file they are about to go into and may refuse (throw): then nothing is written.
   */
  writeRecords(records: WARCRecord[], beforeAppend?: (filename: string) => Promise<void>): Promise<WrittenRecord[]> {
    const result = this.queue.then(() => this.writeNow(records, beforeAppend));
    this.queue = result.catch(() => undefined);
    if (this.options.durable === false) return result;
    // Synced outside the queue: the next batches are written while this sync runs, and share the next one.
    return result.then(async (written) => {
      const last = written[written.length - 1];
      if (last) await this.synced(last.filename, last.offset + last.length);
      return written;
    });
  }

  /** Resolves once `filename` is on disk up to `end`: one fdatasync for every batch waiting meanwhile. */
  private async synced(filename: string, end: number): Promise<void> {
    for (;;) {
      // A file no longer written to was synced as it closed (closeCurrent).
      if (filename !== this.filename || !this.handle || this.syncedUpTo >= end) return;
      if (!this.syncing) {
        const handle = this.handle;
        const syncedFile = this.filename;
        // Up to the last whole batch: a file cut back to a sync never ends halfway through an exchange.
        const upTo = this.wholeSize;
        const cuts = this.cuts;
        this.syncing = (this.options.syncFile ?? ((h: FileHandle) => h.datasync()))(handle).then(() => {
          // Bytes cut back meanwhile (a failed batch) were replaced by others this sync may not have seen.
          if (this.handle !== handle || this.cuts !== cuts || upTo <= this.syncedUpTo) return;
          this.syncedUpTo = upTo;
          this.options.onSynced?.(syncedFile, upTo);
        }).finally(() => (this.syncing = null));
      }
      await this.syncing;
    }
  }

  private async writeNow(records: WARCRecord[], beforeAppend?: (filename: string) => Promise<void>): Promise<WrittenRecord[]> {
    if (this.closed) throw new Error("WARC writer is closed");
    await this.options.beforeWrite?.();
    if (!this.handle) await this.openNext();
    await this.cutDirtyTail();
    await beforeAppend?.(this.filename);
    const batchStart = this.size;
    const written: WrittenRecord[] = [];
    try {
      for (const record of records) written.push(await this.append(record));
      await this.markComplete();
    } catch (err) {
      // The records of one exchange go in whole or not at all: drop those of this batch already written.
      this.bytesWritten -= this.size - batchStart;
      this.size = batchStart;
      await this.cutBack();
      await this.markComplete().catch(() => undefined);
      throw err;
    }
    if (this.size >= this.options.rolloverSize) {
      const filename = this.filename;
      await this.closeCurrent().catch((err: unknown) => this.options.onCloseFailed?.(filename, err));
    }
    return written;
  }

  private async openNext(): Promise<void> {
    const base = `${this.options.filenamePrefix}-${timestampDigits((this.options.now ?? (() => new Date()))())}-${this.uniqueTag}`;
    for (let n = 1; !this.handle; n++) {
      this.filename = n === 1 ? `${base}.warc.gz` : `${base}-${n}.warc.gz`;
      try {
        // "wx" (O_EXCL): never append to (and so never corrupt) a file another writer has.
        this.handle = await open(join(this.options.dir, this.filename), "wx");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST" || n >= 1000) throw err;
      }
    }
    this.size = 0;
    this.wholeSize = 0;
    this.syncedUpTo = 0;
    this.dirtyTail = false;
    try {
      this.marker = await open(join(this.options.dir, openMarkerName(this.filename)), "w");
      await this.marker.write(`${"0".padStart(20, "0")}\n${this.options.owner}\n`, 0);
      // Before any of its records counts as written: a crash must keep the file, and its marker too (without
      // it, a file cut mid-record would be taken as closed and packaged as it is, not repaired).
      if (this.options.durable !== false) {
        await syncDirectory(this.options.dir);
        for (const name of [this.filename, openMarkerName(this.filename)]) this.options.onEntrySynced?.(name);
      }
      await this.options.onFileOpened?.(this.filename);
      await this.append(warcinfoRecord(this.filename, this.options.warcinfo));
      await this.markComplete();
    } catch (err) {
      // A file without its warcinfo is no use: drop it, the next write opens a fresh one.
      await this.discardCurrent();
      throw err;
    }
    this.filesWritten.push(this.filename);
  }

  private async discardCurrent(): Promise<void> {
    const handle = this.handle;
    const marker = this.marker;
    this.handle = null;
    this.marker = null;
    this.bytesWritten -= this.size;
    this.size = 0;
    await handle?.close().catch(() => undefined);
    await marker?.close().catch(() => undefined);
    await rm(join(this.options.dir, this.filename), { force: true }).catch(() => undefined);
    await rm(join(this.options.dir, openMarkerName(this.filename)), { force: true }).catch(() => undefined);
    // If even this fails, packaging finds the file missing and says so (the crawl is not committed).
    await this.options.onFileDiscarded?.(this.filename)?.catch(() => undefined);
  }

  /** Cut the file back to `size` after a failed write; if even that fails, the next write tries first. */
  private async cutBack(): Promise<void> {
    this.cuts += 1;
    this.syncedUpTo = Math.min(this.syncedUpTo, this.size);
    try {
      await this.handle!.truncate(this.size);
      this.dirtyTail = false;
    } catch {
      this.dirtyTail = true;
    }
  }

  private async cutDirtyTail(): Promise<void> {
    if (!this.dirtyTail) return;
    await this.handle!.truncate(this.size);
    this.dirtyTail = false;
  }

  /** Record in the marker that the file is whole up to here: a repair cuts it back to this size. */
  private async markComplete(): Promise<void> {
    this.wholeSize = this.size;
    await this.marker?.write(String(this.size).padStart(20, "0"), 0);
  }

  /** Write one record at `size`; on failure cut it off again (disk full or gone mid-record). */
  private async append(record: WARCRecord): Promise<WrittenRecord> {
    const offset = this.size;
    const payloadFile = filePayloadOf(record);
    const serializer = payloadFile ? gzippedFileRecord(record, payloadFile) : new WARCSerializer(record, { gzip: true, maxMemSize: this.options.maxMemSize ?? 4_000_000 });
    const chunks: Uint8Array[] = [];
    let pending = 0;
    let length = 0;
    try {
      for await (const chunk of serializer) {
        chunks.push(chunk);
        pending += chunk.length;
        if (pending >= 1 << 20) {
          length += await this.writeFully(chunks.splice(0), pending, offset + length);
          pending = 0;
        }
      }
      if (chunks.length) length += await this.writeFully(chunks, pending, offset + length);
    } catch (err) {
      await this.cutBack();
      throw err;
    }
    this.size += length;
    this.bytesWritten += length;
    const headers = record.warcHeaders.headers;
    return {
      filename: this.filename,
      offset,
      length,
      recordId: headers.get("WARC-Record-ID") ?? "",
      type: headers.get("WARC-Type") ?? "",
      date: headers.get("WARC-Date") ?? "",
      url: headers.get("WARC-Target-URI") ?? "",
      payloadDigest: headers.get("WARC-Payload-Digest") ?? null,
    };
  }

  /** writev may write less than asked when the disk fills up, without an error: make that an error. */
  private async writeFully(chunks: Uint8Array[], expected: number, position: number): Promise<number> {
    // Asked before every write, not once per batch: a process stalled (SIGSTOP) between two records
    // of a batch, or mid-record, and taken for dead meanwhile must not write the rest when it resumes.
    await this.options.beforeWrite?.();
    const bytesWritten = await (this.options.writeAt ?? writevAt)(this.handle!, chunks, position);
    if (bytesWritten !== expected) {
      throw Object.assign(new Error(`short write: ${bytesWritten} of ${expected} bytes`), { code: "ENOSPC" });
    }
    return bytesWritten;
  }

  /**
   * Close the current file: synced, closed, its marker removed, onFileClosed told. Whatever fails, the
   * handles are closed and onFileClosed runs (the file holds whole records up to `size`); then the first
   * failure is thrown. A file that could not be synced keeps its marker: a repair checks it.
   */
  private async closeCurrent(): Promise<void> {
    const handle = this.handle;
    if (!handle) return;
    const { filename, size, marker } = this;
    let failure: unknown = null;
    const noting = (err: unknown) => void (failure ??= err);
    try {
      await this.cutDirtyTail();
      await handle.sync();
      this.options.onSynced?.(filename, size);
    } catch (err) {
      noting(err);
    }
    this.handle = null;
    this.marker = null;
    await handle.close().catch(noting);
    await marker?.close().catch(noting);
    if (!failure) await rm(join(this.options.dir, openMarkerName(filename)), { force: true }).catch(noting);
    await this.options.onFileClosed?.(filename, size)?.catch(noting);
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


