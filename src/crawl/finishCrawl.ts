import { writeFileSync } from "node:fs";
import type { LifecycleOptions } from "../config/groups/lifecycleOptions.js";
import { DedupeIndexUnavailableError, NotRetriedError } from "../dedupe/retry.js";
import { unfinishedJournals } from "../dedupe/notes/noteJournal.js";
import { errorMessage, logger } from "../log/logger.js";
import { crawlSummary } from "../log/progress.js";
import type { CrawlCounts, Frontier } from "../frontier/frontier.js";
import { SitemapClaim } from "../state/sitemapClaim.js";
import { isOutOfSpace, isStorageError, storageErrorMessage } from "../util/storageErrors.js";
import { pauseForTests } from "../util/testSeams.js";
import { UploadFailedError, uploadWaczFiles } from "../upload/uploadWaczFiles.js";
import type { CrawlRun } from "./crawlRun.js";
import { ExitCode } from "../lifecycle/exitCodes.js";
import { exitCodeOf, type CrawlEnd, type CrawlOutcome, type CrawlStats, type CrawlStatus } from "./crawlStatus.js";
import { writeCollectionFiles } from "./collectionOutputs.js";
import { reportSeeds } from "./seedOutcomes.js";
import { commitFinishedCrawl, MissingWarcError, noteRecordsOfDeadWriter, packageOrphans, packageWaczFiles, type PackagingContext } from "./packaging.js";
import type { PagePhaseResult } from "./pages/pagePhase.js";
import type { StopControl } from "./stopControl.js";

/**
 * The end of a crawl run, once its pages are done: how it ended, this writer's WACZ files, those of
 * writers that died, the commit into the merged dedupe index, and the stats.
 */
export async function finishCrawl(run: CrawlRun, pages: PagePhaseResult): Promise<CrawlOutcome> {
  const { options, session, stop } = run;
  await run.blocked?.flush();
  const counts = await session.state.counts();
  let { status, failure, failureKind } = await howItEnded(counts, session.state, stop);
  if (status === "done" && options.sitemap) ({ status, failure } = await sitemapsFinished(new SitemapClaim(session.redis, session.membership)));
  // Every process's pages are settled by now (the page phase ends once none is queued or in progress anywhere).
  await reportSeeds(run, counts);

  const packaging: Omit<PackagingContext, "plan"> = {
    options, archiveDir: run.paths.archive, outputDir: run.paths.root, pageList: run.pageList, dedupe: session.dedupe,
    dependencies: run.pipeline.dependencies, listedIn: (urls) => session.state.listedIn(urls), reportFile: run.report.path, skippedReportFile: run.skipped?.path, blockedReportFile: run.blocked?.path, seedsReportFile: run.budgets.limited ? run.seedsReport : undefined, captureReportFile: run.captureReport?.path, assertOwner: () => session.liveness.assertLive(),
  };
  let waczPaths: string[] = [];
  const leaveToRerun = skipsPackaging(options.lifecycle, status);
  if (!stop.fatalError) {
    try {
      // Every index note of what the WARC files hold must be in the index before it is packaged or committed.
      await run.pipeline.notes.settle();
      if (await inheritsKilledRun(run)) await noteRecordsOfDeadWriter(packaging, run.pipeline.plan);
    } catch (err) {
      failure = packagingFailure(err, run.paths.root);
      status = "failed";
      failureKind = failureKindOf(err);
      logger.error("dedupe", failure);
    }
  }
  if (options.generateWACZ && !stop.fatalError && !failure && !leaveToRerun) {
    await pauseForTests("before-package");
    try {
      waczPaths = (await packageWaczFiles({ ...packaging, plan: run.pipeline.plan })).map((r) => r.path);
    } catch (err) {
      failure = packagingFailure(err, run.paths.root);
      status = "failed";
      failureKind = failureKindOf(err);
      logger.error("wacz", failure);
    }
  }

  // Only a crawl that ran to the end joins the merged index, once every process on it has packaged
  // its files (this one packages those of processes that died); interrupted or limited crawls stay
  // uncommitted and can be resumed.
  let committed = false;
  if (!failure && !leaveToRerun) {
    await session.slots.markPackaged(session.slot);
    if (status === "done") {
      try {
        waczPaths.push(...(await packageOrphans({ packaging, stateRedis: session.redis, membership: session.membership, frontier: session.state, slots: session.slots })));
      } catch (err) {
        failure = packagingFailure(err, run.paths.root);
        status = "failed";
        failureKind = failureKindOf(err);
        logger.error("wacz", failure);
      }
      // A journal still holding notes means records in this archive are not in the index yet: no commit.
      const unwritten = failure ? [] : await unfinishedJournals(run.paths.archive);
      if (unwritten.length) {
        failure = `index notes not written yet (${unwritten.join(", ")} in ${run.paths.archive}): the crawl is not committed; run the same command again once the dedupe index answers`;
        status = "failed";
        failureKind = "redis-unavailable";
        logger.error("dedupe", failure);
      }
      if (!failure && (await session.slots.allPackaged())) {
        await pauseForTests("before-commit");
        committed = await commitFinishedCrawl(session.dedupe);
      } else {
        logger.info("crawl", "other crawler processes are still packaging; the last one commits the crawl");
      }
    }
  }

  // --combineWARC, --generateCDX: by the last process to finish, over every WARC file of the crawl.
  if (!failure && (options.output.combineWARC || options.output.generateCDX) && (await session.slots.allPackaged())) {
    try {
      await writeCollectionFiles(run);
    } catch (err) {
      failure = `cannot write the combined WARC or CDXJ index in ${run.paths.root}: ${isStorageError(err) ? storageErrorMessage(err) : errorMessage(err)}`;
      status = "failed";
      failureKind = failureKindOf(err);
      logger.error("crawl", failure);
    }
  }

  const uploadFailure = await uploadToStore(run, waczPaths, status);

  const stats: CrawlStats = {
    crawlId: options.crawlId,
    crawled: counts.done,
    failed: counts.failed,
    failedAttempts: counts.failedAttempts,
    queued: counts.queued,
    pending: counts.pending,
    total: counts.seen,
    // --dedupePagesMinDepth: the limit counts crawled pages (the queue is not capped by it).
    limit: { max: options.limit, hit: options.limit > 0 && (options.dedupeFlags.pagesMinDepth >= 0 ? counts.done : counts.seen) >= options.limit },
    bytesWritten: run.pipeline.writer.bytesWritten,
    elapsedSeconds: Math.round((Date.now() - run.started) / 100) / 10,
    status,
    committed,
    writer: session.slot,
    browserLaunches: pages.browserLaunches,
    truncated: { ...pages.truncated },
    bodiesCutShort: { ...pages.bodiesCutShort },
    skippedRobots: counts.skippedRobots,
    rateLimited: counts.rateLimited,
    blocked: counts.blocked,
    ...(run.blocked ? { blockedReport: run.blocked.path } : {}),
    ...(run.blocked?.adHosts ? { adHosts: { list: run.blocked.adHosts.name, version: run.blocked.adHosts.version, hosts: run.blocked.adHosts.size } } : {}),
    ...(options.dedupeFlags.pagesMinDepth >= 0 ? await skippedStats(session.state) : {}),
    behaviors: { ...pages.behaviors },
    ...(options.refresh || options.skipFreshDays > 0 ? { changes: await run.report.summary(), changeReport: run.report.path } : {}),
  };
  await session.state.setStatus(stats.status);
  if (options.statsFilename) writeFileSync(options.statsFilename, JSON.stringify(stats, null, 2) + "\n");
  logger.milestone("crawl", `crawl ${stats.status}`, { ...stats }, crawlSummary(stats));
  if (uploadFailure && !failure) return { exitCode: ExitCode.UploadFailed, stats, waczPaths, failure: uploadFailure };
  return { exitCode: exitCodeOf(status, { stopReason: stop.reason, forced: stop.forced, failureKind, restartsOnError: options.lifecycle.restartsOnError }), stats, waczPaths, failure };
}

/**
 * Packaging is left out of a dry run (no archive data), and, with --restartsOnError, out of an interrupted
 * crawl: the supervisor restarts it, and the rerun resumes it and packages (browsertrix-crawler's rule).
 */
function skipsPackaging(lifecycle: LifecycleOptions, status: CrawlStatus): boolean {
  if (lifecycle.dryRun) return true;
  if (!lifecycle.restartsOnError || status !== "interrupted") return false;
  logger.info("crawl", "interrupted with --restartsOnError: not packaged; the restarted crawl resumes and packages");
  return true;
}

/** A crawl is done only once its sitemaps were read to the end: else it is not committed, and a rerun reads them. */
async function sitemapsFinished(claim: SitemapClaim): Promise<{ status: CrawlStatus; failure: string | null }> {
  const state = await claim.state();
  if (state === "done") return { status: "done", failure: null };
  const failure = state === "failed"
    ? "the sitemaps' pages could not all be queued (see the log): the crawl is not complete; run the same command again to read them again"
    : `the sitemap reading did not finish (${state}): the crawl is not complete; run the same command again to resume`;
  logger.error("crawl", failure);
  return { status: "failed", failure };
}

/** Put this process's WACZ files into the STORE_* storage, if set; the one line saying why it failed, if it did. */
async function uploadToStore({ options, session }: CrawlRun, waczPaths: string[], status: CrawlStatus): Promise<string | null> {
  if (!options.store) return null;
  if (!options.generateWACZ) {
    logger.warn("storage", "STORE_ENDPOINT_URL is set but --generateWACZ is not: nothing is uploaded (only WACZ files are)");
    return null;
  }
  try {
    await uploadWaczFiles({ settings: options.store, crawlId: options.crawlId, stateRedis: session.redis, waczPaths, completed: status === "done" });
    return null;
  } catch (err) {
    if (!(err instanceof UploadFailedError)) throw err;
    logger.error("storage", err.message);
    return err.message;
  }
}

/** What kind of failure packaging met, for the exit code (browsertrix-crawler's: 3 out of space, 8 Redis unavailable). */
function failureKindOf(err: unknown): CrawlEnd["failureKind"] {
  if (isStorageError(err)) return isOutOfSpace(err) ? "out-of-space" : "other";
  return err instanceof DedupeIndexUnavailableError ? "redis-unavailable" : "other";
}

/** Why packaging failed, in one line; a failure that is not about packaging is thrown on. */
function packagingFailure(err: unknown, root: string): string {
  if (isStorageError(err)) return `cannot write the WACZ in ${root}: ${storageErrorMessage(err)}`;
  if (err instanceof DedupeIndexUnavailableError || err instanceof NotRetriedError || err instanceof MissingWarcError) return `WACZ files not finished: ${errorMessage(err)}`;
  throw err;
}

/** The crawl's status once its pages are done, and the one line saying why, if it failed. */
async function howItEnded(counts: CrawlCounts, state: Frontier, stop: StopControl): Promise<{ status: CrawlStatus; failure: string | null; failureKind?: CrawlEnd["failureKind"] }> {
  const finished = counts.queued === 0 && counts.pending === 0;
  if (stop.fatalError) return { status: "failed", failure: stop.fatalError, failureKind: stop.outOfSpace ? "out-of-space" : "other" };
  if (stop.crawlFailure) {
    const failureKind = stop.reason === "content-check" ? "content-check" : stop.reason === "failed-seed-proxy" ? "failed-seed-proxy" : "failed-seed";
    return { status: "failed", failure: stop.crawlFailure, failureKind };
  }
  if (counts.done === 0 && counts.failed > 0) {
    const failures = await state.failedPages();
    const failure = `no page could be crawled: ${failures[0]?.url} failed: ${failures[0]?.reason}`;
    logger.error("crawl", failure, { failures });
    return { status: "failed", failure, failureKind: "no-page-crawled" };
  }
  if (finished && counts.done === 0 && counts.skippedRobots > 0) {
    const failure = `no page could be crawled: robots.txt disallows every seed (--robots)`;
    logger.error("crawl", failure, { skippedRobots: counts.skippedRobots });
    return { status: "failed", failure, failureKind: "no-page-crawled" };
  }
  const status = stop.reason === "signal" || stop.reason === "rate-limited" ? "interrupted" : stop.reason === "failed-limit" ? "failed-limit" : finished ? "done" : "limit-reached";
  return { status, failure: null };
}

/** --dedupePagesMinDepth: pages taken from the queue but not crawled, as duplicates or past --limit. */
async function skippedStats(state: Frontier): Promise<Pick<CrawlStats, "skippedDuplicates" | "skippedPageLimit">> {
  const skipped = await state.skippedCounts();
  return { skippedDuplicates: skipped.duplicate, skippedPageLimit: skipped.pageLimit };
}

/** Whether a WARC file of this writer was found cut off at the start: a run of it was killed before. */
async function inheritsKilledRun(run: CrawlRun): Promise<boolean> {
  if (!run.pipeline.repairedAtStart.length) return false;
  const own = new Set((await run.pipeline.plan.groups()).flatMap((g) => g.warcFiles));
  return run.pipeline.repairedAtStart.some((f) => own.has(f));
}
