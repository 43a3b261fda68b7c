import type { RobotsTxt } from "../robots/robotsTxt.js";
import type { HostPacing } from "./hostPacing.js";

/** A wait for a host's turn longer than this puts the page back for later rather than holding the worker. */
const DEFER_HOST_WAIT_OVER_MS = 5000;

export interface HostTurnDeps {
  hostPacing: HostPacing;
  /** robots.txt when the crawl obeys it (--robots): its Crawl-delay, if longer, is the interval. */
  robots: RobotsTxt | null;
  /** --minHostInterval. */
  minHostIntervalSeconds: number;
  stop: { readonly immediate: boolean; sleep(ms: number): Promise<void> };
}

/**
 * Wait for this host's turn (--minHostInterval or, with --robots, its robots.txt Crawl-delay if longer; a
 * rate limit's back-off), shared by all processes through Redis. A long back-off puts the page back, due
 * when the host is, and frees the worker for other hosts: its wait is returned then (null: the turn came).
 */
export async function waitForHostTurn(url: string, deps: HostTurnDeps): Promise<number | null> {
  const crawlDelayMs = deps.robots ? await deps.robots.crawlDelayMs(url) : 0;
  const intervalMs = Math.max(Math.round(deps.minHostIntervalSeconds * 1000), crawlDelayMs);
  const host = new URL(url).host;
  for (;;) {
    const waitMs = await deps.hostPacing.turn(host, intervalMs);
    if (waitMs <= 0 || deps.stop.immediate) return null;
    if (waitMs > Math.max(DEFER_HOST_WAIT_OVER_MS, intervalMs)) return waitMs;
    await deps.stop.sleep(waitMs);
  }
}
