import { OptionsError } from "../optionsError.js";

/** browsertrix-crawler's dedupe flags beyond the index itself: page-level skips and live publishing. */
export interface DedupeFlagOptions {
  /**
   * --dedupePagesMinDepth: a page at this depth or deeper whose HTML payload the dedupe index holds is
   * written as a revisit and not loaded further (no subresources, no links); -1 = never.
   */
  pagesMinDepth: number;
  /** --dedupeConcurrent: this crawl's hashes join the merged index as they are written, not at commit. */
  concurrent: boolean;
}

export interface RawDedupeFlagFlags {
  dedupePagesMinDepth?: string;
  dedupeConcurrent?: boolean;
}

export const DEFAULT_DEDUPE_PAGES_MIN_DEPTH = -1;

export function dedupeFlagOptions(flags: RawDedupeFlagFlags): DedupeFlagOptions {
  const raw = flags.dedupePagesMinDepth?.trim();
  const pagesMinDepth = raw === undefined ? DEFAULT_DEDUPE_PAGES_MIN_DEPTH : /^-?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(pagesMinDepth) || pagesMinDepth < -1) {
    throw new OptionsError(`--dedupePagesMinDepth must be a depth of 0 or more, or -1 for never, got ${JSON.stringify(flags.dedupePagesMinDepth)}`);
  }
  return { pagesMinDepth, concurrent: flags.dedupeConcurrent ?? false };
}
