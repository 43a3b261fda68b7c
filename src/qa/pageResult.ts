import { createHash } from "node:crypto";

/** The QA of one page, as written to qa/<file>.json: the one place this format is decided. */
export interface QaPageResult {
  url: string;
  /** When the crawl captured it (pages.jsonl ts). */
  ts: string | null;
  title: string | null;
  /** Base name of this page's files in qa/: <file>.json, <file>.live.png, <file>.replay.png, <file>.diff.png. */
  file: string;
  /** The page's own document replayed (false: the archive does not have it, or the replay never showed it). */
  replayed: boolean;
  scores: {
    /** Share of matching pixels between the crawl's viewport screenshot and the replay's; null without a crawl screenshot. */
    screenshot: number | null;
    /** Text similarity (1 - Levenshtein distance / length) of the crawl's text and the replay's; null without crawl text, or for a page a hybrid crawl captured without a browser. */
    text: number | null;
    /** Share of the replayed page's requests that the archive answered. */
    resources: number;
    /** The lowest of the three: the page is only as whole as its worst part. */
    overall: number;
  };
  resourceCounts: { crawlGood: number | null; crawlBad: number | null; replayGood: number; replayBad: number };
  /** Archived URLs the replayed page asked for that the archive could not give, sorted. */
  missing: string[];
  /** Files next to this one (null when there is no such image). */
  images: { live: string | null; replay: string | null; diff: string | null };
  /** Seconds the replay took to load and settle. */
  loadSeconds: number;
}

/** The summary, qa.json. */
export interface QaSummary {
  source: string;
  threshold: number;
  pages: number;
  /** Pages whose overall score is below the threshold, worst first. */
  below: { url: string; overall: number; file: string }[];
  seconds: number;
  secondsPerPage: number;
  /** Every page, worst first. */
  results: { url: string; file: string; scores: QaPageResult["scores"]; missing: number }[];
}

/** Worst first; ties in URL order, so the order is stable. */
export function worstFirst<T extends { url: string; scores: { overall: number } }>(results: readonly T[]): T[] {
  return [...results].sort((a, b) => a.scores.overall - b.scores.overall || (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
}

/**
 * A file name for a page's QA files, safe on any file system: the URL's host and path with everything but
 * letters, digits, '.', '-' and '_' made '_', cut to 80 characters, then a hash of the whole URL (two URLs
 * differing only in what was cut or replaced still get two names).
 */
export function pageFileName(url: string): string {
  const readable = url.replace(/^[a-z]+:\/\//i, "").replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._]+/, "").slice(0, 80);
  return `${readable || "page"}-${createHash("sha256").update(url).digest("hex").slice(0, 10)}`;
}
