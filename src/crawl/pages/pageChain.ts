import type { BehaviorTally } from "../../behaviors/behaviors.js";
import type { RateLimitAnswer } from "../../capture/pageCapture.js";
import type { CrawlOptions } from "../../config/crawlOptions.js";
import type { CaptureHistory, KnownCapture } from "../../dedupe/captureHistory.js";
import type { NoteBacklog } from "../../dedupe/notes/noteBacklog.js";
import { logger } from "../../log/logger.js";
import type { PageLoadResult, PageWorker } from "../../page/pageWorker.js";
import type { ByteTallySink } from "../../budgets/byteTally.js";
import type { PageResourceRecorder } from "../../pipeline/pageResources.js";
import type { WaczPlan } from "../../pipeline/waczPlan.js";
import type { ChangeReport } from "../../reports/changeReport.js";
import type { PageList } from "../../reports/pageList.js";
import type { RobotsTxt } from "../../robots/robotsTxt.js";
import type { PageAdmission } from "../../scope/admission.js";
import type { SeedScopes } from "../../scope/seedScopes.js";
import type { Frontier, QueuedPage } from "../../frontier/frontier.js";
import type { HostPacing } from "../../politeness/hostPacing.js";
import type { SeedBudgets } from "../../budgets/seedBudgets.js";
import type { CrawlWatch } from "../crawlWatch.js";
import type { StopControl } from "../stopControl.js";
import type { SeedOfPage } from "./seedRedirect.js";
import type { HybridCapture } from "./hybridLoad.js";

/** What crawling a page reads and writes besides the page itself. */
export interface PageContext {
  options: CrawlOptions;
  state: Frontier;
  history: CaptureHistory;
  /** Outlinks go into the capture history through it: retried while the dedupe index is away. */
  notes: NoteBacklog;
  report: ChangeReport;
  /** Each seed's scope by seed id (with --addRedirectedSeeds, seeds added during the crawl too). */
  scopes: SeedScopes;
  pageList: PageList;
  stop: StopControl;
  /** Pages stored with bodies cut off on every attempt: counted here, listed in `report` (JSON lines). */
  truncated: { count: number; report: string };
  /** Behavior outcomes of the pages this process crawled, for the stats. */
  behaviors: BehaviorTally;
  /** Which WACZ a page finishing now is listed in. */
  plan: WaczPlan;
  /** Writes pages' text and screenshot records (--text to-warc, --screenshot). */
  pageResources: PageResourceRecorder;
  /** Queues pages (robots.txt permitting, with --robots). */
  admission: PageAdmission;
  hostPacing: HostPacing;
  /** robots.txt when the crawl obeys it (--robots): its Crawl-delay paces each host. */
  robots: RobotsTxt | null;
  /** What page outcomes mean for the crawl: health, failing seeds, content checks, rate-limit interrupts. */
  watch: CrawlWatch;
  /** Each seed's budget and the per-host page cap (a page holds a slot of them while it is crawled). */
  budgets: SeedBudgets;
  /** --captureMode hybrid: how each page is captured, by its template; null in browser mode. */
  hybrid: HybridCapture | null;
}

/** Why a page taken from the queue is settled without being crawled (its lease released, not retried). */
export type SkipReason = "duplicate" | "pageLimit" | "seedPageLimit" | "seedSizeLimit" | "hostPageLimit";

/**
 * How one attempt at a page ends: its lease settled one way, once.
 * - crawled: listed in `listedIn` (a fresh page, not fetched, is listed nowhere: "");
 * - skipped: taken but not to be crawled (a duplicate, a limit or a budget reached);
 * - failed: an attempt that counts; retried up to `maxRetries` failed attempts;
 * - handedBack: not the page's fault, not an attempt (a stop, a failed content check, storage gone);
 * - deferred: put back for later, its host's turn or its rate limit to wait out, or another process's learning of its template.
 */
export type Settlement =
  | { kind: "crawled"; listedIn: string; fresh: { archived: string } | null }
  | { kind: "skipped"; reason: SkipReason; message: string; details: Record<string, unknown> }
  | { kind: "failed"; reason: string; error: string | null; maxRetries: number; logged: boolean }
  | { kind: "handedBack" }
  | { kind: "deferred"; until: { hostTurnInMs: number } | { laterInMs: number; why: string } | { rateLimit: RateLimitAnswer; error: string | null } };

/** A step lets the page go on to the next one. */
export const GO_ON = null;

/** One page attempt as it goes down the chain: what the steps learn about it. */
export interface PageAttempt {
  readonly worker: PageWorker;
  readonly page: QueuedPage;
  readonly context: PageContext;
  /** Counts the WARC bytes the worker writes for the page (its seed's size). */
  readonly tally: ByteTallySink;
  /** The page holds a slot of its seed's budget and host cap: given back unless it ends crawled. */
  budgetHeld: boolean;
  /** The scope its links are judged by and the seed id they carry (a redirected seed's may change). */
  seed: SeedOfPage | null;
  /** The page's latest capture in the capture history (--refresh, --skipFreshDays). */
  previous: KnownCapture | null;
  /** When the load started (performance.now()). */
  loadStarted: number;
  result: PageLoadResult | null;
  /** Where a seed page ended up after redirects, when that is not its own URL. */
  landedAt: string | null;
  /** The WACZ whose pages list holds the page. */
  listedIn: string;
  /** Links queued from the page. */
  queued: number;
}

export interface PageStep {
  readonly name: string;
  /** GO_ON, or how the attempt ends. */
  run(attempt: PageAttempt): Promise<Settlement | typeof GO_ON>;
}

/**
 * Run the steps in order until one settles the attempt; a page that passes them all is crawled, listed
 * where the listing step said. Returns the settlement and the step that decided it.
 */
export async function runChain(steps: readonly PageStep[], attempt: PageAttempt): Promise<{ settlement: Settlement; step: string | null }> {
  for (const step of steps) {
    const settlement = await step.run(attempt);
    if (settlement === GO_ON) continue;
    logger.debug("page", "page attempt settled", { url: attempt.page.url, step: step.name, kind: settlement.kind });
    return { settlement, step: step.name };
  }
  return { settlement: { kind: "crawled", listedIn: attempt.listedIn, fresh: null }, step: null };
}
