import { logger } from "../log/logger.js";

export type StopReason = "signal" | "time-limit" | "size-limit" | "failed-limit" | "storage-error";

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
  private wakers = new Set<() => void>();
  private immediateHooks: (() => void)[] = [];
  private timers: NodeJS.Timeout[] = [];

  get requested(): boolean {
    return this.reason !== null;
  }

  request(reason: StopReason): void {
    if (this.reason === null) {
      this.reason = reason;
      logger.info("crawl", "stopping: no new pages will be started", { reason });
    } else if (reason === "signal" && !this.immediate) {
      logger.warn("crawl", "second signal: stopping now, in-flight pages go back to the queue");
      this.stopNow();
    }
    for (const wake of this.wakers) wake();
  }

  /** Nothing more can be written (disk full, folder unwritable): stop now, keep what is whole. */
  fatal(message: string): void {
    if (this.fatalError) return;
    this.fatalError = message;
    logger.error("crawl", message);
    this.reason = "storage-error";
    this.stopNow();
    for (const wake of this.wakers) wake();
  }

  /** Called when in-flight pages must be abandoned (closing the browser's tabs makes their loads fail). */
  onImmediate(hook: () => void): void {
    this.immediateHooks.push(hook);
  }

  private stopNow(): void {
    this.immediate = true;
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

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
      if (this.requested && !this.immediate && ms > 0) done();
    });
  }

  dispose(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
  }
}
