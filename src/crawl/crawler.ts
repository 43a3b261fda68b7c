import { join } from "node:path";
import type { CrawlOptions } from "../config/crawlOptions.js";
import { LiveView } from "../screencast/liveView.js";
import { logger } from "../log/logger.js";
import type { AddressPolicy } from "../fetch/addressPolicy.js";
import { adHostsFor } from "../reports/blockedReport.js";
import { openCapturePipeline } from "../pipeline/openPipeline.js";
import { BrowsertrixServiceLists } from "../state/browsertrixServiceLists.js";
import { SeedBudgets } from "../budgets/seedBudgets.js";
import { writerName } from "../state/membership/writerSlots.js";
import { storageErrorMessage } from "../util/storageErrors.js";
import { collectionPaths, createCollectionDirs, type CollectionPaths } from "../config/collectionPaths.js";
import { openPageOutputs, type CrawlRun } from "./crawlRun.js";
import { finishCrawl } from "./finishCrawl.js";
import type { CrawlOutcome } from "./crawlStatus.js";
import { CrawlWatch } from "./crawlWatch.js";
import { HealthCheck } from "../lifecycle/healthCheck.js";
import type { CrawlMetrics } from "../metrics/crawlMetrics.js";
import { overwriteCollection } from "../lifecycle/overwrite.js";
import { crawlPages } from "./pages/pagePhase.js";
import { admitSeeds } from "./seeds.js";
import { closeRunContext, openRunContext, type RunContext } from "./runContext.js";
import { joinCrawl } from "./joinCrawl.js";
import { StateFiles, resumeFromStateFile } from "./stateFiles.js";
import { StopControl } from "./stopControl.js";
import { proxyInUse } from "../proxy/activeProxies.js";
import { timestampDigits } from "../archive/warcDate.js";

export type { CrawlOutcome, CrawlStats } from "./crawlStatus.js";

/**
 * A crawl, start to finish: page -> exchanges -> records -> WARC -> index -> WACZ -> commit.
 *   1. the collection's folders and log file
 *   2. join the crawl: Redis, dedupe index, heartbeat, writer slot               joinCrawl.ts
 *   3. the capture pipeline every exchange goes through                         pipeline/openPipeline.ts
 *   4. the seeds into the shared queue                                          seeds.ts
 *   5. the page phase: browser and workers until the queue is drained            pagePhase.ts
 *   6. the end: status, WACZ packaging, dead writers' files, commit, stats      finishCrawl.ts
 */
export async function runCrawl(options: CrawlOptions, stop = new StopControl(), metrics: CrawlMetrics | null = null, onAddressPolicy?: (policy: AddressPolicy) => void): Promise<CrawlOutcome> {
  const started = Date.now();
  // First of all: a health check port in use fails the crawl before anything is deleted or written.
  const health = options.lifecycle.healthCheckPort ? await HealthCheck.start(options.lifecycle.healthCheckPort, options.workers) : null;
  let live: LiveView | null = null;
  try {
    // The live view's port likewise (--screencastPort); --screencastRedis alone serves no page.
    const { screencastPort, screencastRedis } = options.lifecycle;
    live = screencastPort || screencastRedis ? await LiveView.start(screencastPort, options.workers) : null;
    return await runCrawlWith(options, stop, started, { health, live, metrics, onAddressPolicy });
  } finally {
    await live?.close();
    await health?.close();
  }
}

/** What watches the run from outside: the health check, the live view, the metrics (each null when not asked for). */
interface Watchers {
  health: HealthCheck | null;
  live: LiveView | null;
  metrics: CrawlMetrics | null;
  /** Told the run's address policy once the seeds have set it (the crawl command's proxy relay and --qa replay obey it too). */
  onAddressPolicy: ((policy: AddressPolicy) => void) | undefined;
}

async function runCrawlWith(options: CrawlOptions, stop: StopControl, started: number, { health, live, metrics, onAddressPolicy }: Watchers): Promise<CrawlOutcome> {
  // --blockAds: its list is read first, so that a missing one stops the crawl before anything is written.
  const adHosts = adHostsFor(options.block);
  const paths = openCollection(options);
  const session = await joinCrawl(options, paths, stop);
  const lists = new BrowsertrixServiceLists(session.redis, session.membership.keys, { pages: options.state.writePagesToRedis, errors: options.state.logErrorsToRedis, behaviors: options.state.logBehaviorsToRedis });
  logger.onLine((entry, line) => {
    lists.logLine(entry.logLevel, entry.context, line);
    live?.logEntry(entry);
  });
  const stateFiles = new StateFiles(options, session, paths.root);
  metrics?.readCrawlStateFrom(() => session.state.counts());
  let context: RunContext | null = null;
  try {
    const pipeline = await openCapturePipeline({
      settings: options,
      stateRedis: session.redis,
      dedupe: session.dedupe,
      membership: session.membership,
      liveness: session.liveness,
      writer: writerName(session.slot),
      archiveDir: paths.archive,
      stop,
      events: metrics,
    });
    metrics?.readBytesWrittenFrom(() => pipeline.writer.bytesWritten);
    const watch = new CrawlWatch({ lifecycle: options.lifecycle, rateLimit: options.rateLimit, redis: session.redis, crawlId: options.crawlId, stop, health, metrics, proxied: proxyInUse() });
    const budgets = new SeedBudgets(session.redis, session.membership.keys, session.membership.processId, options.budgets.seeds, options.budgets.maxPagesPerHost);
    const outputs = openPageOutputs(options, paths, session, lists, adHosts);
    if (live && options.lifecycle.screencastRedis) await live.shareThrough(session.redis, session.membership.keys);
    await resumeFromStateFile(options, session);
    context = await openRunContext(options, outputs.blocking);
    onAddressPolicy?.(context.addresses);
    const run: CrawlRun = { options, paths, session, pipeline, stop, started, watch, live, budgets, context, ...outputs };
    const seeding = await admitSeeds(options, context, session.state, budgets, run.skipped ? (page, reason) => run.skipped?.add(page, reason) : undefined);
    logger.milestone("crawl", "crawl started", { crawlId: options.crawlId, processId: session.processId, seeds: options.seeds, collection: options.collection });
    stop.watchLimits({ timeLimitSeconds: options.timeLimit, sizeLimitBytes: options.sizeLimit, bytesWritten: () => pipeline.writer.bytesWritten });
    stateFiles.start();
    const pages = await crawlPages(run, seeding);
    await stateFiles.atEnd();
    const outcome = await finishCrawl(run, pages);
    live?.finished(outcome.stats);
    const { queued, pending, crawled, failed } = outcome.stats;
    metrics?.crawlEnded({ queued, pending, done: crawled, failed });
    return outcome;
  } finally {
    // The crawl state's Redis connection closes: scrapes from now on serve the last counts.
    metrics?.crawlEnded(null);
    stateFiles.stop();
    await closeRunContext(context);
    logger.onLine(null);
    await lists.flush();
    await session.close();
  }
}

/** The collection's folders under --cwd, and this run's log file in its logs/. */
function openCollection(options: CrawlOptions): CollectionPaths {
  const paths = collectionPaths(options.cwd, options.collection);
  if (options.lifecycle.overwrite) overwriteCollection(paths, options.cwd, options.collection);
  try {
    createCollectionDirs(paths);
  } catch (err) {
    throw new Error(`cannot create the output folder ${paths.root}: ${storageErrorMessage(err)}`);
  }
  logger.attachFile(join(paths.logs, `crawl-${timestampDigits(new Date()).slice(0, 14)}-${process.pid}.log`));
  return paths;
}
