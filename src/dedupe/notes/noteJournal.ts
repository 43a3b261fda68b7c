import { open, readFile, readdir, rm, stat, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { AppendLog, cutTornTail, lineLogEnd, type AppendLogOptions } from "../../durable/appendLog.js";
import { isIndexNote, type IndexNote } from "./indexNotes.js";

/** How a journal file is written: `openFile` (tests inject failing writes and syncs), the power-loss test's `syncLog`. */
export type JournalWriting = Pick<AppendLogOptions, "openFile" | "syncLog">;

/** A writer's journal: beside its WARC files in the archive folder, so whoever packages them finds it. */
export function noteJournalPath(archiveDir: string, writer: string): string {
  return join(archiveDir, `notes-${writer}.jsonl`);
}

/** Journals in an archive folder that still hold notes (the crawl must not be committed while one does). */
export async function unfinishedJournals(archiveDir: string): Promise<string[]> {
  const names = (await readdir(archiveDir).catch(() => [] as string[])).filter((f) => /^notes-.*\.jsonl$/.test(f));
  const sizes = await Promise.all(names.map(async (f) => (await stat(join(archiveDir, f)).catch(() => null))?.size ?? 0));
  return names.filter((_, i) => sizes[i] > 0);
}

/** Read this many bytes at a time when bringing journaled notes back into memory. */
const READ_CHUNK = 64 * 1024;

/**
 * Index notes the dedupe index could not take yet, in order: every one is appended to a JSON-lines file
 * (an append log, durable/appendLog.ts) and synced before it counts as kept (a crawler killed during an
 * outage loses none), and only the first `window` are held in memory; the rest are read back from the file
 * as the first ones are applied. Once every note is applied the file is removed.
 */
export class NoteJournal {
  /** The oldest notes, parsed (at most `window`). */
  private readonly buffered: IndexNote[] = [];
  /** Byte offset in the file of the first note not in `buffered`, and how many such notes follow it. */
  private readOffset = 0;
  private unbuffered = 0;
  /** Bytes in the file (the kept notes' lines: nothing else is ever left in it). */
  private fileSize = 0;
  /** The file, open for appends (from the first append on). */
  private log: AppendLog | null = null;
  /** Appends, reads and removal one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly path: string,
    private readonly window: number,
    private readonly writing: JournalWriting,
  ) {}

  /**
   * Open a writer's journal, taking over the notes a previous run (or a dead writer) left in it. `writing.openFile`:
   * how the file is opened (tests inject failing writes and syncs); `writing.syncLog`: the power-loss test's.
   */
  static async open(path: string, window = 1000, writing: JournalWriting = {}): Promise<NoteJournal> {
    const journal = new NoteJournal(path, window, writing);
    if ((await stat(path).catch(() => null)) === null) return journal;
    // A line cut short by a kill mid-append was never synced: that note never counted as kept (cut off here).
    journal.fileSize = (await cutTornTail(path, lineLogEnd, writing.openFile)).kept;
    const content = await readFile(path);
    journal.unbuffered = content.subarray(0, journal.fileSize).toString("utf8").split("\n").filter(Boolean).length;
    await journal.refill();
    return journal;
  }

  /** Notes kept, in memory or only in the file. */
  get size(): number {
    return this.buffered.length + this.unbuffered;
  }

  /** Notes held in memory now (never more than the window). */
  get inMemory(): number {
    return this.buffered.length;
  }

  /**
   * Append a note; resolves once it is on disk, and only then is it counted. A failed append leaves the file as
   * the counts say: its line is cut off again (the file ended; the next append opens it again).
   */
  append(note: IndexNote): Promise<void> {
    return this.serially(async () => {
      const line = Buffer.from(JSON.stringify(note) + "\n");
      if (this.log?.failed) this.log = await this.log.reopen();
      this.log ??= await AppendLog.open(this.path, { ...this.writing, durable: true });
      const log = this.log;
      try {
        await log.append(line);
      } catch (err) {
        await this.endFailed(log);
        throw err;
      }
      this.fileSize = log.size;
      if (this.unbuffered === 0 && this.buffered.length < this.window) {
        this.buffered.push(note);
        this.readOffset = this.fileSize;
      } else {
        this.unbuffered += 1;
      }
    });
  }

  /** Close a log whose append failed (cut back to the kept notes); a journal left with none is removed. */
  private async endFailed(log: AppendLog): Promise<void> {
    await log.close().catch(() => undefined);
    if (log.size === 0 && this.size === 0) {
      this.log = null;
      await rm(this.path, { force: true }).catch(() => undefined);
    }
  }

  /** The oldest note kept, reading more back from the file when memory holds none. */
  async first(): Promise<IndexNote | undefined> {
    if (!this.buffered.length && this.unbuffered) await this.serially(() => this.refill());
    return this.buffered[0];
  }

  /** The oldest note is applied: drop it; the file goes once no note is left. */
  async shift(): Promise<void> {
    this.buffered.shift();
    if (this.size === 0) {
      await this.serially(async () => {
        if (this.size > 0) return;
        await this.log?.close().catch(() => undefined);
        this.log = null;
        await rm(this.path, { force: true });
        this.fileSize = 0;
        this.readOffset = 0;
      });
    }
  }

  private serially<T>(step: () => Promise<T>): Promise<T> {
    const run = this.queue.then(step);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Parse up to `window` notes from readOffset on. */
  private async refill(): Promise<void> {
    if (!this.unbuffered) return;
    const file: FileHandle = await open(this.path, "r");
    try {
      let pending = Buffer.alloc(0);
      while (this.unbuffered && this.buffered.length < this.window) {
        const chunk = Buffer.alloc(READ_CHUNK);
        const { bytesRead } = await file.read(chunk, 0, READ_CHUNK, this.readOffset + pending.length);
        if (!bytesRead) throw new Error(`index note journal ${this.path} ends before its last note`);
        pending = Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
        let end: number;
        while (this.unbuffered && this.buffered.length < this.window && (end = pending.indexOf(0x0a)) >= 0) {
          const line = pending.subarray(0, end).toString("utf8");
          pending = pending.subarray(end + 1);
          this.readOffset += end + 1;
          this.unbuffered -= 1;
          const note: unknown = line ? JSON.parse(line) : null;
          if (!isIndexNote(note)) throw new Error(`index note journal ${this.path}: not a note: ${line.slice(0, 200)}`);
          this.buffered.push(note);
        }
      }
    } finally {
      await file.close();
    }
  }
}
