/**
 * Workers of this process that found the queue empty wait for work here. A page attempt ending in this
 * process (its links queued, it put back for a retry, or the crawl drained with it) wakes them at once;
 * otherwise they look again after the wait (another process's work, a retry's backoff, a dead process).
 * Without the wake a seed's links waited up to a whole idle wait (500 ms) before three of four workers
 * took them, and the crawl's end did the same.
 */
export class IdleWorkers {
  /** Counts page ends; a worker that saw a different count before it looked at the queue does not wait. */
  private generation = 0;
  private readonly waiting = new Set<() => void>();

  /** The mark to take before looking at the queue, given back to `wait`. */
  mark(): number {
    return this.generation;
  }

  /** A page attempt of this process ended: waiting workers look at the queue again. */
  pageEnded(): void {
    this.generation += 1;
    for (const wake of [...this.waiting]) wake();
  }

  /**
   * Wait up to `ms` for a page end, unless one came since `mark` (it could have queued what that look
   * missed). `sleep` is the stop-aware sleep (a stop wakes it, and so does `until`).
   */
  async wait(mark: number, ms: number, sleep: (ms: number, until: Promise<void>) => Promise<void>): Promise<void> {
    if (mark !== this.generation) return;
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    this.waiting.add(wake);
    try {
      await sleep(ms, woken);
    } finally {
      this.waiting.delete(wake);
    }
  }
}
