import { appendFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { errorMessage, logger } from "../log/logger.js";
import type { SkipReason } from "../scope/admission.js";
import type { QueuedPage } from "../frontier/frontier.js";

/** Distinct (reason, URL) pairs remembered per process; past this a page skipped again may be listed again. */
const REMEMBERED = 100_000;

/**
 * browsertrix-crawler's --reportSkipped: reports/skippedPages.jsonl, a json-pages-1.0 header line then
 * one line per page found but not queued: {url, seedUrl, depth, seed, reason, ts}. browsertrix-crawler
 * writes a line each time a page is met (a link on every page: a line per page); here each URL is listed
 * once per reason by a process. Appended as it goes: a resumed crawl keeps its lines, and the header
 * is written once.
 */
export class SkippedReport {
  private readonly listed = new Set<string>();
  private failed = false;

  constructor(
    readonly path: string,
    private readonly seedUrlOf: (seedId: number) => string,
    hasText: boolean,
  ) {
    try {
      mkdirSync(dirname(path), { recursive: true });
      if (!existsSync(path)) appendFileSync(path, JSON.stringify({ format: "json-pages-1.0", id: "pages", title: "Skipped Pages", hasText: String(hasText) }) + "\n");
    } catch (err) {
      this.warn(err);
    }
  }

  add(page: QueuedPage, reason: SkipReason): void {
    const key = `${reason} ${page.url}`;
    if (this.listed.has(key)) return;
    if (this.listed.size < REMEMBERED) this.listed.add(key);
    const line = { url: page.url, seedUrl: this.seedUrlOf(page.seedId), depth: page.depth, seed: page.depth === 0, reason, ts: new Date().toISOString() };
    try {
      appendFileSync(this.path, JSON.stringify(line) + "\n");
    } catch (err) {
      this.warn(err);
    }
  }

  /** A report that cannot be written does not stop the crawl (as in browsertrix-crawler): said once. */
  private warn(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    logger.warn("crawl", "cannot write the skipped-pages report (--reportSkipped): pages skipped from now on may be missing from it", { path: this.path, error: errorMessage(err) });
  }
}
