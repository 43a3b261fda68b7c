import { logger } from "../log/logger.js";
import { isOutOfSpace } from "../util/storageErrors.js";

export type StopReason =
  | "signal" | "time-limit" | "size-limit" | "disk-utilization" | "failed-limit" | "storage-error"
  /** --failOnFailedSeed, --failOnContentCheck: the crawl fails (crawlFailure says why). */
  | "failed-seed" | "content-check"
  /** --failOnFailedSeed, the seed failing at its proxy (exit code 21, as browsertrix-crawler). */
  | "failed-seed-proxy"
  /** --rateLimitInterruptCount reached. */
  | "rate-limited";

/**
 * Why and when the crawl stops taking pages: signals and the time/size limits. Workers check
 * `requested` between pages and sleep through `sleep()` so a stop wakes them at once.
 */
export class StopControl {
  reason: StopReason | null = null;
  /** A second signal: stop now, handing in-flight pages back to the queue. */
  immediate = false;
  /** Why the crawl cannot go on (storage errors); becomes the one-line error of exit code 1. */
  fatalError: string | null = null;
  /** Why the crawl failed on a --failOnFailedSeed or --failOnContentCheck condition: its one-line error. */
  crawlFailure: string | null = null;
  /** The fatal error was a full disk or quota (exit code 3). */
  outOfSpace = false;
  /** A second signal stopped the crawl at once (exit code 13, browsertrix-crawler's forced interrupt). */
  forced = false;
  private wakers = new Set<() => void>();
  private immediateHooks: (() => void)[] = [];
  private abandonListeners = new Set<() => void>();
  private timers: NodeJS.Timeout[] = [];
  /** Set once the page phase is over (tabs, WARC and browser closed): only packaging is left. */
  pagesClosed = false;

  /**
   * @param signalGraceMs after a first signal, in-flight pages get this long (--pageLoadTimeout) before
   *   they are abandoned and handed back, so a signal always ends the page phase promptly.
   * @param watchdog last resort: if the page phase has not ended `ms` after a stop was asked for (some
   *   step hung despite its deadline), `onStuck` ends the process; its leases are recovered by others or
   *   on restart.
   */
  constructor(
    private readonly signalGraceMs = 90_000,
    private readonly watchdog: { ms: number; onStuck: () => void } | null = null,
  ) {}

  get requested(): boolean {
    return this.reason !== null;
  }

  request(reason: StopReason): void {
    if (this.reason === null) {
      this.reason = reason;
      logger.milestone("crawl", "stopping: no new pages will be started", { reason });
      if (reason === "signal") this.armGrace();
      this.armWatchdog();
    } else if (reason === "signal" && !this.immediate) {
      logger.warn("crawl", "second signal: stopping now, in-flight pages go back to the queue");
      this.forced = true;
      this.stopNow();
    }
    for (const wake of this.wakers) wake();
  }

  /** The crawl must fail (a seed failed, a content check): no new pages; in-flight ones finish as for a limit. */
  fail(reason: "failed-seed" | "failed-seed-proxy" | "content-check", message: string): void {
    if (this.crawlFailure) return;
    this.crawlFailure = message;
    logger.error("crawl", message);
    this.request(reason);
  }

  /** Nothing more can be written (disk full, folder unwritable): stop now, keep what is whole. */
  fatal(message: string, cause?: unknown): void {
    if (this.fatalError) return;
    this.fatalError = message;
    this.outOfSpace = isOutOfSpace(cause);
    logger.error("crawl", message);
    if (this.reason === null) this.armWatchdog();
    this.reason = "storage-error";
    this.stopNow();
    for (const wake of this.wakers) wake();
  }

  /** Called when in-flight pages must be abandoned (closing the browser's tabs makes their loads fail). */
  onImmediate(hook: () => void): void {
    this.immediateHooks.push(hook);
  }

  private armWatchdog(): void {
    if (!this.watchdog) return;
    const { ms, onStuck } = this.watchdog;
    const timer = setTimeout(() => {
      if (this.pagesClosed) return;
      logger.error("crawl", `the crawl did not stop within ${Math.round(ms / 1000)}s of being asked to: exiting`);
      onStuck();
    }, ms);
    timer.unref();
    this.timers.push(timer);
  }

  private armGrace(): void {
    const timer = setTimeout(() => {
      if (this.immediate || this.pagesClosed) return;
      logger.warn("crawl", "in-flight pages did not finish in time after the signal: handing them back to the queue", { graceSeconds: this.signalGraceMs / 1000 });
      this.stopNow();
      for (const wake of this.wakers) wake();
    }, this.signalGraceMs);
    timer.unref();
    this.timers.push(timer);
  }

  /** `work`, unless in-flight pages are abandoned first: then it rejects at once. */
  untilAbandoned<T>(work: Promise<T>): Promise<T> {
    if (this.immediate) {
      // The work has already started: its own failure (a tab closed under it) must not go unhandled.
      work.catch(() => undefined);
      return Promise.reject(new Error("stopped: the page was abandoned"));
    }
    return new Promise<T>((resolve, reject) => {
      const abandon = () => reject(new Error("stopped: the page was abandoned"));
      this.abandonListeners.add(abandon);
      work.then(resolve, reject).finally(() => this.abandonListeners.delete(abandon));
    });
  }

  private stopNow(): void {
    if (this.immediate) return;
    this.immediate = true;
    for (const abandon of this.abandonListeners) abandon();
    for (const hook of this.immediateHooks) hook();
  }

  watchLimits(limits: { timeLimitSeconds: number; sizeLimitBytes: number; bytesWritten: () => number }): void {
    if (limits.timeLimitSeconds > 0) {
      const timer = setTimeout(() => this.request("time-limit"), limits.timeLimitSeconds * 1000);
      timer.unref();
      this.timers.push(timer);
    }
    if (limits.sizeLimitBytes > 0) {
      const timer = setInterval(() => {
        if (limits.bytesWritten() >= limits.sizeLimitBytes) this.request("size-limit");
      }, 250);
      timer.unref();
      this.timers.push(timer);
    }
  }

  /** Sleep `ms`, woken early by a stop or when `until` settles. */
  sleep(ms: number, until?: Promise<unknown>): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
      until?.then(done, done);
      if (this.requested && !this.immediate && ms > 0) done();
    });
  }

  dispose(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
  }
}
