import { join } from "node:path";
import type { CrawlOptions } from "../config/crawlOptions.js";
import type { OpenPipeline } from "../pipeline/openPipeline.js";
import { writerName } from "../state/membership/writerSlots.js";
import { ChangeReport } from "./changeReport.js";
import type { CollectionPaths } from "./collection.js";
import type { CrawlWatch } from "./crawlWatch.js";
import { PageList } from "./pageList.js";
import type { CrawlSession } from "./session.js";
import type { StopControl } from "./stopControl.js";

/** Where this writer lists its pages and reports what it found. */
export interface PageOutputs {
  /** Pages crawled, per WACZ (pages.jsonl: seeds, extraPages.jsonl: the rest). */
  pageList: PageList;
  /** --refresh / --skipFreshDays: what changed, page by page (reports/changes.jsonl). */
  report: ChangeReport;
  /** Pages whose bodies stayed cut off after every retry, one JSON line each. */
  truncatedReport: string;
}

/** What the stages of one crawl run share (set up by runCrawl, crawler.ts). */
export interface CrawlRun extends PageOutputs {
  options: CrawlOptions;
  paths: CollectionPaths;
  session: CrawlSession;
  pipeline: OpenPipeline;
  stop: StopControl;
  /** When the run started (ms since the epoch). */
  started: number;
  /** What page outcomes mean for the crawl (health check, --failOn* flags, rate-limit interrupts). */
  watch: CrawlWatch;
}

export function openPageOutputs(options: CrawlOptions, paths: CollectionPaths, session: CrawlSession): PageOutputs {
  const writer = writerName(session.slot);
  // Writer slot 0 keeps the plain names; other writers of a shared crawl (same folder) get their own files.
  const reportName = (kind: string) => join(paths.root, "reports", session.slot === 0 ? `${kind}.jsonl` : `${kind}-${writer}.jsonl`);
  return {
    pageList: new PageList(paths.pages, `${options.collection}.wacz`, options.text.includes("to-pages")),
    report: new ChangeReport(reportName("changes"), session.redis, { kinds: session.membership.keys.changeKinds(writer), counts: session.membership.keys.changeCounts(writer) }),
    truncatedReport: reportName("truncated"),
  };
}
