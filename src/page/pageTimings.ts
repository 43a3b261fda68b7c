import { performance } from "node:perf_hooks";
import type { CutAtEnd } from "../capture/pageAttempt.js";
import { logger } from "../log/logger.js";

/**
 * Where one page's time went, phase by phase, for the debug line "page timings" (the crawl benchmark sums
 * them: bench/crawl.ts). A phase that comes twice adds up; a phase that did not happen is left out.
 */
export const PAGE_PHASES = [
  /** The navigation, up to --waitUntil (load). */
  "load",
  /** The network-idle wait after the load (--netIdleWait). */
  "netIdleAfterLoad",
  /** --postLoadDelay. */
  "postLoadDelay",
  /** The behaviors, from asking the page's frames to run them to their end (or --behaviorTimeout). */
  "behaviors",
  /** The network-idle wait after the behaviors, for what they made the page fetch. */
  "netIdleAfterBehaviors",
  /** --saveStorage: reading the page's storage. */
  "saveStorage",
  /** The page's end: what is in flight stored, then its scripts stopped (bodies still arriving, fetches after a 206). */
  "drain",
  /** The page's title and links. */
  "links",
  /** --text and --screenshot, and storing what they made the page fetch. */
  "extracts",
] as const;
export type PagePhase = (typeof PAGE_PHASES)[number];

/** The debug line's message: the benchmark looks for it. */
export const PAGE_TIMINGS_MESSAGE = "page timings";

export class PageTimings {
  private readonly ms = new Map<PagePhase, number>();
  /** Per behavior (the library's names, e.g. "Autoscroll"), ms from the behaviors' start to its end. */
  behaviors: Record<string, number> = {};
  /** What the page's end cut off: requests refused after it, exchanges unstored at the drain's deadline. */
  cutAtEnd: CutAtEnd = { refused: 0, unfinished: 0 };
  private readonly started = performance.now();

  /** Run `work` as (part of) `phase`. */
  async time<T>(phase: PagePhase, work: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await work();
    } finally {
      this.ms.set(phase, (this.ms.get(phase) ?? 0) + performance.now() - start);
    }
  }

  /** The phases that happened, in ms, and the page's whole time in the worker ("total"). */
  summary(): Partial<Record<PagePhase | "total", number>> {
    const summary: Partial<Record<PagePhase | "total", number>> = {};
    for (const phase of PAGE_PHASES) {
      const ms = this.ms.get(phase);
      if (ms !== undefined) summary[phase] = Math.round(ms);
    }
    summary.total = Math.round(performance.now() - this.started);
    return summary;
  }

  log(url: string): void {
    const behaviors = Object.keys(this.behaviors).length ? { behaviors: this.behaviors } : {};
    logger.debug("page", PAGE_TIMINGS_MESSAGE, { url, ms: this.summary(), ...behaviors, cutAtEnd: this.cutAtEnd });
  }
}
