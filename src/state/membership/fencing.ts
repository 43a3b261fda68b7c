import { errorMessage, logger } from "../../log/logger.js";
import { withTimeout } from "../../util/deadline.js";
import type { Membership } from "./membership.js";

/** Thrown at a write attempted after other processes took this one for dead. */
export class FencedError extends Error {}

/** Stop writing this long before the heartbeat could have expired (clock steps, slow disks). */
const SAFETY_MARGIN_MS = 5000;
const safetyMarginMs = (ttlMs: number) => Math.min(SAFETY_MARGIN_MS, ttlMs / 3);

/**
 * This process's claim to be alive, as others see it: the heartbeat in the crawl-state Redis, renewed
 * every third of its TTL. Others take over a process's work only once its heartbeat is gone (and fence
 * it), so this process writes only while its last renewal is surely still in force: past that it waits
 * for a renewal (Redis away), and once fenced (it stalled and was taken for dead) it never writes again
 * and the crawl stops.
 */
export class Liveness {
  private renewedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private waiters = new Set<() => void>();
  private pending: { sentAt: number; result: Promise<"renewed" | "fenced"> } | null = null;
  fenced = false;

  constructor(
    private readonly membership: Membership,
    private readonly onFenced: (message: string) => void,
    private readonly renewEveryMs = Math.floor(membership.heartbeatTtlMs / 3),
  ) {}

  async start(): Promise<void> {
    await this.renewNow();
    if (this.fenced) throw new FencedError(fencedMessage);
    this.timer = setInterval(() => void this.renewNow(), this.renewEveryMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const wake of this.waiters) wake();
  }

  async renewNow(): Promise<void> {
    if (this.fenced) return;
    // One renewal at a time: while Redis is away the one sent waits for it, and renewals must not pile up.
    if (!this.pending) {
      const renewal = { sentAt: Date.now(), result: this.membership.heartbeat() };
      const settled = () => {
        if (this.pending === renewal) this.pending = null;
      };
      renewal.result.then(settled, settled);
      this.pending = renewal;
    }
    const { sentAt, result: renewal } = this.pending;
    try {
      const result = await withTimeout(renewal, this.membership.heartbeatTtlMs / 3, "heartbeat renewal timed out");
      if (result === "fenced") {
        this.fenced = true;
        logger.error("crawl", fencedMessage);
        this.onFenced(fencedMessage);
      } else {
        // The key's TTL started when Redis ran the command, after we sent it: counting from the send is safe.
        this.renewedAt = Math.max(this.renewedAt, sentAt);
      }
    } catch (err) {
      if (!this.inForce()) logger.warn("crawl", "cannot renew this process's heartbeat: writing paused until the crawl-state Redis answers", { error: errorMessage(err) });
    }
    for (const wake of this.waiters) wake();
  }

  private inForce(): boolean {
    return Date.now() < this.renewedAt + this.membership.heartbeatTtlMs - safetyMarginMs(this.membership.heartbeatTtlMs);
  }

  /** Resolves while this process may write; waits out a Redis outage; throws once it is fenced. */
  async assertLive(): Promise<void> {
    while (!this.fenced && !this.inForce()) {
      if (!this.timer) throw new FencedError("liveness stopped: the crawl is closing");
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(poll);
          this.waiters.delete(wake);
          resolve();
        };
        const poll = setTimeout(wake, 1000);
        this.waiters.add(wake);
      });
    }
    if (this.fenced) throw new FencedError(fencedMessage);
  }
}

const fencedMessage =
  "this crawler process was taken for dead by the others (it stalled past its heartbeat) and its work handed on: stopping without writing more";
