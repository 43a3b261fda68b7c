import { errorMessage, logger } from "../log/logger.js";
import { ThrottledWarning } from "../log/throttledWarning.js";
import { DedupeIndexUnavailableError } from "./retry.js";

interface Note {
  what: string;
  write: () => Promise<void>;
}

/** Backoff between retries of the oldest waiting note while the index is away. */
const RETRY_MS = [250, 500, 1000, 2000, 4000];

/**
 * Index notes (a response's hash entry and counts, a revisit's counts, the capture history, a page's
 * outlinks) for records already in the WARC: the crawl must not go on without them, nor wait for them
 * page by page while the dedupe index is away. A note the index cannot take now is kept and retried in
 * the background, in order, until it answers; packaging waits for the backlog (settle) before the crawl
 * can be committed, so the index always ends holding what the archive holds.
 */
export class NoteBacklog {
  private readonly waiting: Note[] = [];
  private draining: Promise<void> | null = null;
  private readonly unavailable = new ThrottledWarning("dedupe");
  private lastError = "";

  /** Write a note now, or (the index being away, or notes already waiting) keep it for the retries. */
  async write(what: string, write: () => Promise<void>): Promise<void> {
    if (this.waiting.length === 0) {
      try {
        await write();
        return;
      } catch (err) {
        this.unavailable.warn("dedupe index unavailable: index notes kept, retried until it answers", { note: what, error: errorMessage(err) });
      }
    }
    this.waiting.push({ what, write });
    this.draining ??= this.drain().finally(() => (this.draining = null));
  }

  get size(): number {
    return this.waiting.length;
  }

  /**
   * Wait until every kept note is written. While the index stays away this waits too, up to `budgetMs`;
   * then it throws (the crawl is not committed: committing would leave stored records out of the index).
   */
  async settle(budgetMs = 30_000): Promise<void> {
    const deadline = Date.now() + budgetMs;
    while (this.waiting.length) {
      if (Date.now() > deadline) {
        throw new DedupeIndexUnavailableError(
          `cannot write ${this.waiting.length} index notes (first: ${this.waiting[0].what}): dedupe index unreachable for ${Math.round(budgetMs / 1000)}s (${this.lastError})`,
        );
      }
      this.draining ??= this.drain().finally(() => (this.draining = null));
      await Promise.race([this.draining, new Promise((r) => setTimeout(r, 1000))]);
    }
  }

  private async drain(): Promise<void> {
    let failures = 0;
    while (this.waiting.length) {
      const note = this.waiting[0];
      try {
        await note.write();
        this.waiting.shift();
        if (failures) logger.info("dedupe", "dedupe index answers again: kept index notes written", { note: note.what, waiting: this.waiting.length });
        failures = 0;
      } catch (err) {
        this.lastError = errorMessage(err);
        this.unavailable.warn("dedupe index unavailable: index notes kept, retried until it answers", { waiting: this.waiting.length, error: this.lastError });
        await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]));
        failures += 1;
      }
    }
  }
}
