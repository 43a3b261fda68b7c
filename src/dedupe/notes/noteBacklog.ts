import { errorMessage, logger } from "../../log/logger.js";
import { ThrottledWarning } from "../../log/throttledWarning.js";
import { describeNote, type IndexNote, type IndexNoteWriter } from "./indexNotes.js";
import { NoteJournal, type JournalWriting } from "./noteJournal.js";
import { DedupeIndexUnavailableError } from "../retry.js";

/** Backoff between retries of the oldest waiting note while the index is away. */
const RETRY_MS = [250, 500, 1000, 2000, 4000];

/**
 * Index notes (a response's hash entry and counts, a revisit's counts, the capture history, a page's
 * outlinks) for records already in the WARC: the crawl must not go on without them, nor wait for them
 * page by page while the dedupe index is away. A note the index cannot take now is journaled to disk
 * (see NoteJournal: a crash loses none, memory holds a bounded window) and retried in the background,
 * in order, until it answers; packaging waits for the backlog (settle) before the crawl can be
 * committed, so the index always ends holding what the archive holds. Whoever packages a dead writer's
 * files replays its journal first (replay).
 */
export class NoteBacklog {
  private draining: Promise<void> | null = null;
  private readonly unavailable = new ThrottledWarning("dedupe");
  private lastError = "";
  /** Notes whose first write failed and whose append is not finished yet (they wait, in order, too). */
  private appending = 0;

  private constructor(
    private readonly journal: NoteJournal,
    private readonly writer: IndexNoteWriter,
  ) {}

  /** The backlog of a writer, resuming the notes its journal still holds (a previous run's, or a dead writer's). */
  static async open(journalPath: string, writer: IndexNoteWriter, window?: number, writing: JournalWriting = {}): Promise<NoteBacklog> {
    const backlog = new NoteBacklog(await NoteJournal.open(journalPath, window, writing), writer);
    if (backlog.size) {
      logger.info("dedupe", "index notes left in a journal by an earlier run: written before the crawl is committed", { journal: journalPath, notes: backlog.size });
      backlog.startDraining();
    }
    return backlog;
  }

  /** Write every note a writer's journal holds, in order, then remove the journal (throws if the index stays away). */
  static async replay(journalPath: string, writer: IndexNoteWriter, budgetMs?: number): Promise<void> {
    await (await NoteBacklog.open(journalPath, writer)).settle(budgetMs);
  }

  /** Write a note now, or (the index being away, or notes already waiting) journal it for the retries. */
  async write(note: IndexNote): Promise<void> {
    if (this.size === 0) {
      try {
        // Counted once even on a first try: the index may apply a note whose answer is lost (the server
        // killed mid-reply), and the journaled retry must then add nothing.
        await this.writer.apply(note, true);
        return;
      } catch (err) {
        this.lastError = errorMessage(err);
        this.unavailable.warn("dedupe index unavailable: index notes kept, retried until it answers", { note: describeNote(note), error: this.lastError });
      }
    }
    this.appending += 1;
    try {
      await this.journal.append(note);
    } finally {
      this.appending -= 1;
    }
    this.startDraining();
  }

  /** Notes waiting (in memory or only in the journal). */
  get size(): number {
    return this.journal.size + this.appending;
  }

  /** Notes held in memory (at most the journal's window). */
  get inMemory(): number {
    return this.journal.inMemory;
  }

  /**
   * Wait until every kept note is written. While the index stays away this waits too, up to `budgetMs`;
   * then it throws (the crawl is not committed: committing would leave stored records out of the index).
   */
  async settle(budgetMs = 30_000): Promise<void> {
    const deadline = Date.now() + budgetMs;
    while (this.size) {
      if (Date.now() > deadline) {
        const first = await this.journal.first();
        throw new DedupeIndexUnavailableError(
          `cannot write ${this.size} index notes (first: ${first ? describeNote(first) : "?"}): dedupe index unreachable for ${Math.round(budgetMs / 1000)}s (${this.lastError}); they are kept in ${this.journal.path} for the next run`,
        );
      }
      this.startDraining();
      await Promise.race([this.draining, new Promise((r) => setTimeout(r, 1000))]);
    }
  }

  private startDraining(): void {
    // A journal that cannot be read back is reported by settle (the crawl is then not committed).
    this.draining ??= this.drain()
      .catch((err: unknown) => {
        this.lastError = errorMessage(err);
        logger.error("dedupe", "cannot read back the index note journal", { journal: this.journal.path, error: this.lastError });
      })
      .finally(() => (this.draining = null));
  }

  private async drain(): Promise<void> {
    let failures = 0;
    for (let note = await this.journal.first(); note; note = await this.journal.first()) {
      try {
        // Once only: the note may have been written before a crash that kept it in the journal.
        await this.writer.apply(note, true);
        await this.journal.shift();
        if (failures) logger.info("dedupe", "dedupe index answers again: kept index notes written", { note: describeNote(note), waiting: this.size });
        failures = 0;
      } catch (err) {
        this.lastError = errorMessage(err);
        this.unavailable.warn("dedupe index unavailable: index notes kept, retried until it answers", { waiting: this.size, error: this.lastError });
        await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]));
        failures += 1;
      }
    }
  }
}
