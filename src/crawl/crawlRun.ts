import { join } from "node:path";
import type { AdHostList } from "../block/adHosts.js";
import type { Blocking } from "../block/blocking.js";
import type { RunContext } from "./runContext.js";
import type { CrawlOptions } from "../config/crawlOptions.js";
import type { LiveView } from "../screencast/liveView.js";
import type { OpenPipeline } from "../pipeline/openPipeline.js";
import type { BrowsertrixServiceLists, ServicePageEntry } from "../state/browsertrixServiceLists.js";
import type { SeedBudgets } from "../budgets/seedBudgets.js";
import { writerName } from "../state/membership/writerSlots.js";
import { startBlocking, type BlockedReport } from "../reports/blockedReport.js";
import { ChangeReport } from "../reports/changeReport.js";
import type { CollectionPaths } from "../config/collectionPaths.js";
import type { CrawlWatch } from "./crawlWatch.js";
import { PageList, type PageEntry } from "../reports/pageList.js";
import { SkippedReport } from "../reports/skippedReport.js";
import { CaptureReport } from "../reports/captureReport.js";
import type { JoinedCrawl } from "./joinCrawl.js";
import type { StopControl } from "./stopControl.js";
import { testSeams } from "../util/testSeams.js";

/** Where this writer lists its pages and reports what it found. */
export interface PageOutputs {
  /** Pages crawled, per WACZ (pages.jsonl: seeds, extraPages.jsonl: the rest). */
  pageList: PageList;
  /** --refresh / --skipFreshDays: what changed, page by page (reports/changes.jsonl). */
  report: ChangeReport;
  /** Pages whose bodies stayed cut off after every retry, one JSON line each. */
  truncatedReport: string;
  /** --reportSkipped: pages found but not queued (reports/skippedPages.jsonl); null = not asked for. */
  skipped: SkippedReport | null;
  /** --blockRules / --blockAds: requests blocked, counted and listed (reports/blocked.jsonl); null = nothing blocked. */
  blocked: BlockedReport | null;
  /** --blockRules / --blockAds: what is blocked (the run context hands it on); null = nothing blocked. */
  blocking: Blocking | null;
  /** Each seed's pages, bytes and end (reports/seeds.jsonl), written as the crawl ends. */
  seedsReport: string;
  /** --captureMode hybrid: how each page was captured, and why (reports/capture.jsonl); null in browser mode. */
  captureReport: CaptureReport | null;
}

/** What the stages of one crawl run share (set up by runCrawl, crawler.ts). */
export interface CrawlRun extends PageOutputs {
  options: CrawlOptions;
  paths: CollectionPaths;
  session: JoinedCrawl;
  pipeline: OpenPipeline;
  stop: StopControl;
  /** When the run started (ms since the epoch). */
  started: number;
  /** What page outcomes mean for the crawl (health check, --failOn* flags, rate-limit interrupts). */
  watch: CrawlWatch;
  /** --screencastPort / --screencastRedis: the crawl watched live (src/screencast/); null when not asked for. */
  live: LiveView | null;
  /** Each seed's budget and counts, the per-host page cap (reports/seeds.jsonl at the end). */
  budgets: SeedBudgets;
  /** What every connection of the run obeys (runContext.ts): address policy, --header, blocking, socket gate. */
  context: RunContext;
}

export function openPageOutputs(options: CrawlOptions, paths: CollectionPaths, session: JoinedCrawl, lists: BrowsertrixServiceLists, adHosts: AdHostList | null = null): PageOutputs {
  const writer = writerName(session.slot);
  // Writer slot 0 keeps the plain names; other writers of a shared crawl (same folder) get their own files.
  const reportName = (kind: string) => join(paths.root, "reports", session.slot === 0 ? `${kind}.jsonl` : `${kind}-${writer}.jsonl`);
  return {
    pageList: new PageList(paths.pages, `${options.collection}.wacz`, options.text.includes("to-pages"), (entry, filename) => lists.page(btxPageEntry(entry, filename)), testSeams().fileWriting()),
    report: new ChangeReport(reportName("changes"), session.redis, { kinds: session.membership.keys.changeKinds(writer), counts: session.membership.keys.changeCounts(writer) }),
    truncatedReport: reportName("truncated"),
    skipped: options.output.reportSkipped ? new SkippedReport(reportName("skippedPages"), (seedId) => options.seeds[seedId] ?? "", options.text.includes("to-pages")) : null,
    ...startBlocking(options.block, adHosts, reportName("blocked"), session.state),
    seedsReport: reportName("seeds"),
    captureReport: options.capture.mode === "hybrid" ? new CaptureReport(reportName("capture")) : null,
  };
}

/** A listed page as browsertrix-crawler pushes it to Redis (--writePagesToRedis): no text, its WACZ named. */
function btxPageEntry(entry: PageEntry, filename: string): ServicePageEntry {
  const { id, url, title, loadState, ts, mime, status, depth, favIconUrl } = entry;
  return { id, url, title, loadState, ts, mime, status, ...(entry.seed ? { seed: true as const } : {}), depth, ...(favIconUrl ? { favIconUrl } : {}), filename };
}
