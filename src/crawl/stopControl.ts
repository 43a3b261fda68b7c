import { logger } from "../log/logger.js";

export type StopReason = "signal" | "time-limit" | "size-limit";

/**
 * Why and when the crawl stops taking pages: signals and the time/size limits. Workers check
 * `requested` between pages and sleep through `sleep()` so a stop wakes them at once.
 */
export class StopControl {
  reason: StopReason | null = null;
  /** A second signal: stop now, handing in-flight pages back to the queue. */
  immediate = false;
  private wakers = new Set<() => void>();
  private timers: NodeJS.Timeout[] = [];

  get requested(): boolean {
    return this.reason !== null;
  }

  request(reason: StopReason): void {
    if (this.reason === null) {
      this.reason = reason;
      logger.info("crawl", "stopping: no new pages will be started", { reason });
    } else if (reason === "signal") {
      this.immediate = true;
      logger.warn("crawl", "second signal: stopping now, in-flight pages go back to the queue");
    }
    for (const wake of this.wakers) wake();
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
