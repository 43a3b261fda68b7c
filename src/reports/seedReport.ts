import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { errorMessage, logger } from "../log/logger.js";
import type { FailedPage } from "../frontier/frontier.js";
import type { SeedBudget, SeedTally } from "../budgets/seedBudgets.js";

/**
 * How a seed ended: its budget stopped it (`pageLimit`, `sizeLimit`), the crawl's --timeLimit ended it with
 * its pages still queued (`timeLimit`), the crawl stopped otherwise with its pages still queued
 * (`interrupted`: a signal, a crawl-wide limit), its seed page failed (`failed`), else `done`.
 */
export type SeedEnd = "done" | "pageLimit" | "sizeLimit" | "timeLimit" | "interrupted" | "failed";

/** One line of reports/seeds.jsonl. */
export interface SeedReportLine {
  seedId: number;
  url: string;
  /** Pages of the seed crawled (by every process of the crawl). */
  pages: number;
  /** WARC bytes written for them and their resources. */
  bytes: number;
  end: SeedEnd;
  /** The seed's budget: pages, bytes (0 = none). */
  limit: number;
  sizeLimit: number;
}

/** What the end of a crawl knows about its seeds. */
export interface SeedReportInput {
  seeds: string[];
  budgets: SeedBudget[];
  tallies: SeedTally[];
  failed: FailedPage[];
  /** Seeds (given, by id) with pages still queued or in progress when the crawl stopped. */
  unfinished: ReadonlySet<number>;
  /** Why the crawl stopped before its queue was empty ("time-limit", "signal"...); null: it was not stopped. */
  stopReason: string | null;
}

/** Each seed's line: the pages and bytes counted, and how it ended. */
export function seedReportLines(input: SeedReportInput): SeedReportLine[] {
  return input.seeds.map((url, seedId) => {
    const tally = input.tallies[seedId] ?? { pages: 0, bytes: 0, budgetEnd: null };
    const budget = input.budgets[seedId] ?? { pages: 0, bytes: 0 };
    const seedFailed = input.failed.some((page) => page.depth === 0 && (page.seedId === seedId || (page.seedId === undefined && page.url === url)));
    const end: SeedEnd = seedFailed && tally.pages === 0 ? "failed"
      : tally.budgetEnd ?? (input.unfinished.has(seedId) && input.stopReason ? (input.stopReason === "time-limit" ? "timeLimit" : "interrupted") : "done");
    return { seedId, url, pages: tally.pages, bytes: tally.bytes, end, limit: budget.pages, sizeLimit: budget.bytes };
  });
}

/**
 * reports/seeds.jsonl: one line per seed given, {seedId, url, pages, bytes, end, limit, sizeLimit}, so that
 * a next stage can take the seeds that hit a limit. Rewritten whole at each process's end from the
 * crawl's shared counts (the last process to finish writes the complete one); a report that cannot be
 * written is said in the log and does not fail the crawl.
 */
export function writeSeedReport(path: string, lines: SeedReportLine[]): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    const partial = `${path}.${process.pid}.tmp`;
    writeFileSync(partial, lines.map((line) => JSON.stringify(line) + "\n").join(""));
    renameSync(partial, path);
  } catch (err) {
    logger.warn("crawl", "cannot write the seeds report", { path, error: errorMessage(err) });
  }
}
