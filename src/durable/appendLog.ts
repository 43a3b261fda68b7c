import { mkdir, open } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { syncDirectory } from "./syncDirectory.js";
import { writeFully, type WritableFile } from "./wholeFile.js";

/** What an append log needs of an open file: a FileHandle has it all; tests pass one that writes a few bytes at a time, or fails its syncs. */
export interface LogFile extends WritableFile {
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  stat(): Promise<{ size: number }>;
  close(): Promise<void>;
}

/** How a log's file is opened: "wx" a new one (EEXIST if it is there), "r+" one that is. */
export type OpenLogFile = (path: string, flags: "wx" | "r+") => Promise<LogFile>;

export const openLogFile: OpenLogFile = (path, flags) => open(path, flags);

/** Where a file's whole part ends, given its size: what lies past it is a torn tail (a write a crash cut short). */
export type WholeEnd = (file: LogFile, size: number, path: string) => Promise<number>;

/** A file of lines is whole up to its last newline. */
export const lineLogEnd: WholeEnd = async (file, size) => {
  const chunk = Buffer.alloc(64 * 1024);
  for (let end = size; end > 0; ) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await file.read(chunk, 0, end - start, start);
    const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline >= 0) return start + newline + 1;
    end = start;
  }
  return 0;
};

/** The power-loss test's record of what is on disk: a test that kills the writer cuts each file back to it. */
export interface SyncLog {
  synced(filename: string, upTo: number): void;
  entrySynced(filename: string): void;
}

export interface AppendLogOptions {
  /** "new": the file must not exist yet (EEXIST); "append" (the default): created, or continued after its torn tail is cut. */
  create?: "new" | "append";
  /** Where an existing file's whole part ends (default: after its last newline). */
  wholeEnd?: WholeEnd;
  /**
   * An append counts only once an fdatasync covers it (default on; the power-loss test turns it
   * off, as do benchmarks and tests that measure without it).
   */
  durable?: boolean;
  /** Create the folders above the file; those created are synced with its entry. */
  makeFolders?: boolean;
  /** Told each time the file is known to be on disk up to some size, and once its name is (the power-loss test's log). */
  syncLog?: SyncLog;
  /** How the sync log names the file (default: its base name). */
  logName?: string;
  /** Other names in the file's folder, created before its first sync: that folder sync makes them durable too (told to the sync log). */
  companions?: string[];
  /** How the file is opened (tests inject short writes and failing or held syncs here). */
  openFile?: OpenLogFile;
  /** Told each time the file is known to be on disk up to `upTo` bytes (each sync, and its close). */
  onSynced?: (upTo: number) => void;
}

/**
 * A file only ever appended to, whose appends count once they are on disk. Every write is checked (a short
 * write goes on, a write that takes nothing is ENOSPC) and positional at the end of what was written, so a
 * failed one is cut off again exactly. Appends made while a sync runs share the next one (group commit), and
 * each resolves only once a sync covers it. The folder is synced before the first sync counts: a host crash
 * keeps the file, not only its bytes.
 *
 * A failed write or sync ends the file's use: every later append rejects, and its owner closes it (then
 * reopens it, or goes on in a new file). A failed fsync on Linux may drop the pages it could not write while
 * the next fsync succeeds, so nothing after the last good sync is trusted again: appends it did not cover
 * reject, and close cuts the file back to what that sync covered.
 *
 * Entries written in parts (a WARC record streamed from a temp file) go through write, then commit (whole)
 * or rollback (cut off); a sync vouches for committed entries only.
 */
export class AppendLog {
  /** End of the last committed entry, of what is written (committed or not), of what a sync covered. */
  private whole: number;
  private written: number;
  private syncedTo = 0;
  private syncing: Promise<void> | null = null;
  /** Counts cut-backs: a sync begun before one cannot vouch for what was written after it. */
  private cuts = 0;
  private writeFailure: unknown = null;
  private syncFailure: unknown = null;
  private entry: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  private closed = false;
  private appends: Promise<unknown> = Promise.resolve();
  private readonly durable: boolean;
  private readonly logName: string;

  private constructor(
    readonly path: string,
    private readonly file: LogFile,
    size: number,
    /** Folders whose sync makes the file's name durable: its own, and the parents of those created for it. */
    private readonly folders: string[],
    private readonly options: AppendLogOptions,
  ) {
    // What the file held when opened is what a failure cuts it back to at most: this log vouches for no less.
    this.whole = this.written = this.syncedTo = size;
    this.durable = options.durable ?? true;
    this.logName = options.logName ?? basename(path);
  }

  static async open(path: string, options: AppendLogOptions = {}): Promise<AppendLog> {
    const openFile = options.openFile ?? openLogFile;
    const folders = options.makeFolders ? await makeFolders(dirname(path)) : [dirname(path)];
    try {
      return new AppendLog(path, await openFile(path, "wx"), 0, folders, options);
    } catch (err) {
      if (options.create === "new" || (err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const file = await openFile(path, "r+");
    try {
      const size = await cutTail(file, path, options.wholeEnd ?? lineLogEnd);
      return new AppendLog(path, file, size, folders, options);
    } catch (err) {
      await file.close().catch(() => undefined);
      throw err;
    }
  }

  /** Bytes of committed entries: where the file ends once closed. */
  get size(): number {
    return this.whole;
  }

  /** Where the next write goes (past the committed entries by what the entry being written has so far). */
  get end(): number {
    return this.written;
  }

  /** A write or a sync failed: nothing more is appended; its owner closes it. */
  get failed(): boolean {
    return this.writeFailure !== null || this.syncFailure !== null;
  }

  /** Append one whole entry; resolves with its offset once it is on disk (at once when not durable). */
  async append(bytes: Uint8Array): Promise<number> {
    const run = this.appends.then(async () => {
      const offset = this.written;
      await this.write(bytes);
      this.commit();
      return offset;
    });
    this.appends = run.catch(() => undefined);
    const offset = await run;
    await this.synced(offset + bytes.length);
    return offset;
  }

  /** Write part of an entry at the end; a failure cuts the entry off and fails the file. */
  async write(bytes: Uint8Array): Promise<void> {
    this.assertWritable();
    try {
      await writeFully(this.file, bytes, this.written);
    } catch (err) {
      this.writeFailure ??= err;
      await this.cutBack();
      throw err;
    }
    this.written += bytes.length;
  }

  /** What was written since the last commit is a whole entry: a sync may vouch for it. */
  commit(): number {
    this.whole = this.written;
    return this.whole;
  }

  /** Cut off what was written since the last commit (an entry that cannot be finished); failing that fails the file. */
  async rollback(): Promise<void> {
    if (this.written !== this.whole) await this.cutBack();
  }

  /** Resolves once the file is on disk up to `upTo` (default: its committed entries): one fdatasync for all who wait meanwhile. */
  async synced(upTo = this.whole): Promise<void> {
    if (!this.durable) return;
    for (;;) {
      if (this.syncedTo >= upTo) return;
      if (this.syncFailure !== null) throw this.syncFailure;
      if (this.closing) {
        // Its close syncs what it keeps: wait for that, then look again.
        if (this.closed) throw new Error(`${this.path} was closed before a sync covered ${upTo} bytes`);
        await this.closing.catch(() => undefined);
        continue;
      }
      this.syncing ??= this.syncOnce().finally(() => (this.syncing = null));
      await this.syncing.catch(() => undefined);
    }
  }

  /** The file's name is on disk: its folder synced (once), and the folders above it created for it. */
  syncEntry(): Promise<void> {
    if (!this.durable) return Promise.resolve();
    this.entry ??= (async () => {
      for (const folder of this.folders) await syncDirectory(folder);
      for (const name of [this.logName, ...(this.options.companions ?? [])]) this.options.syncLog?.entrySynced(name);
    })();
    return this.entry;
  }

  /**
   * Close the file, synced: up to its committed entries, or, after a failed sync, cut back to what the last good
   * sync covered (size says where it ends then). Throws if that fails; the file is closed all the same.
   */
  close(): Promise<void> {
    this.closing ??= this.end_();
    return this.closing;
  }

  /** After a failure: close this log and open the file again, cut back to where this one ended (what it vouched for). */
  async reopen(): Promise<AppendLog> {
    await this.close().catch(() => undefined);
    const keep = this.whole;
    return AppendLog.open(this.path, { ...this.options, create: "append", wholeEnd: async (_file, size) => Math.min(size, keep) });
  }

  private async syncOnce(): Promise<void> {
    const upTo = this.whole;
    const cuts = this.cuts;
    try {
      await this.syncEntry();
      await this.file.datasync();
    } catch (err) {
      this.syncFailure ??= err;
      throw err;
    }
    if (this.cuts !== cuts || upTo <= this.syncedTo) return;
    this.syncedTo = upTo;
    this.tellSynced(upTo);
  }

  private async end_(): Promise<void> {
    await this.appends;
    await this.syncing?.catch(() => undefined);
    let failure: unknown = null;
    try {
      if (this.syncFailure !== null && this.durable) {
        // What the failed sync did not write may be gone while the page cache still shows it: keep what a good one covered.
        this.whole = this.written = this.syncedTo;
        this.cuts += 1;
        await this.file.truncate(this.whole);
        await this.file.datasync();
      } else {
        if (this.written !== this.whole || this.writeFailure !== null) await this.file.truncate(this.whole);
        this.written = this.whole;
        await this.syncEntry();
        await this.file.datasync();
        this.syncedTo = this.whole;
        this.tellSynced(this.whole);
      }
    } catch (err) {
      this.syncFailure ??= err;
      failure = err;
    }
    await this.file.close().catch((err: unknown) => (failure ??= err));
    this.closed = true;
    if (failure !== null) throw failure;
  }

  private async cutBack(): Promise<void> {
    this.cuts += 1;
    this.written = this.whole;
    try {
      await this.file.truncate(this.whole);
    } catch (err) {
      this.writeFailure ??= err;
    }
  }

  private assertWritable(): void {
    if (this.closing) throw new Error(`${this.path} is closed`);
    const failure = this.syncFailure ?? this.writeFailure;
    if (failure === null) return;
    const code = (failure as NodeJS.ErrnoException).code;
    const message = failure instanceof Error ? failure.message : String(failure);
    throw Object.assign(new Error(`${this.path}: an earlier write or sync failed (${message}): nothing more is appended to it`), code ? { code } : {});
  }

  private tellSynced(upTo: number): void {
    this.options.onSynced?.(upTo);
    this.options.syncLog?.synced(this.logName, upTo);
  }
}

/**
 * Cut a file's torn tail (a write a crash cut short) and make the cut durable; returns the size it keeps. The
 * WARC repair passes its own `wholeEnd` (its open marker's size, or the end of its last whole gzip member).
 */
export async function cutTornTail(path: string, wholeEnd: WholeEnd, openFile: OpenLogFile = openLogFile): Promise<{ size: number; kept: number }> {
  const file = await openFile(path, "r+");
  try {
    const size = (await file.stat()).size;
    return { size, kept: await cutTail(file, path, wholeEnd, size) };
  } finally {
    await file.close();
  }
}

async function cutTail(file: LogFile, path: string, wholeEnd: WholeEnd, size?: number): Promise<number> {
  const current = size ?? (await file.stat()).size;
  const kept = Math.min(current, await wholeEnd(file, current, path));
  if (kept < current) {
    await file.truncate(kept);
    await file.datasync();
  }
  return kept;
}

/** Create `dir` and the folders above it that are missing; returns the folders to sync for a file in it. */
async function makeFolders(dir: string): Promise<string[]> {
  const first = await mkdir(dir, { recursive: true });
  const folders = [dir];
  if (first === undefined) return folders;
  // Each folder created holds its name in the one above it, up to the one above the first created.
  for (let created = dir; ; created = dirname(created)) {
    if (!folders.includes(dirname(created))) folders.push(dirname(created));
    if (created === first || dirname(created) === created) break;
  }
  return folders;
}
