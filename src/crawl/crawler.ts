import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis } from "ioredis";
import type { CrawlOptions } from "../config/crawlOptions.js";
import { ExchangeRecorder, describeExchange } from "../archive/exchangeRecorder.js";
import { WarcWriter } from "../archive/warcWriter.js";
import { BrowserHost } from "../browser/browserHost.js";
import { repairUnfinishedWarcs } from "../archive/warcRepair.js";
import { WriterSlots, writerName, type UnreachableWriter } from "../state/membership/writerSlots.js";
import { Membership, newProcessId } from "../state/membership/membership.js";
import { ExchangeClaims } from "../state/exchangeClaims.js";
import { HostPacing } from "../state/hostPacing.js";
import { SitemapClaim } from "../state/sitemapClaim.js";
import { isStorageError, storageErrorMessage } from "./storageErrors.js";
import { DedupeIndex } from "../dedupe/dedupeIndex.js";
import { DedupeIndexUnavailableError } from "../dedupe/retry.js";
import { Deduplicator } from "../dedupe/deduplicator.js";
import { DependencyTracker } from "../dedupe/dependencies.js";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/process.js";
import { CrawlProgressBar, crawlSummary } from "../log/progress.js";
import { EmbeddedRedis } from "../redis/embedded.js";
import { connectRedis } from "../redis/connect.js";
import { CrawlState } from "../state/crawlState.js";
import { Liveness } from "../state/membership/liveness.js";
import { pauseForTests } from "../util/testPause.js";
import { SOFTWARE } from "../version.js";
import { collectionPaths, createCollectionDirs, type CollectionPaths } from "./collection.js";
import { crawlPage, extractOptionsOf, type PageContext } from "./crawlPage.js";
import { PageResourceRecorder } from "../archive/pageResourceRecorder.js";
import { ExitCode, type ExitCodeValue } from "./exitCodes.js";
import { commitFinishedCrawl, packageWaczFiles } from "./finishCrawl.js";
import { PageList } from "./pageList.js";
import { PageWorker } from "./pageWorker.js";
import { emptyTally, type BehaviorTally } from "../browser/behaviors.js";
import { SeedScope } from "../scope/seedScope.js";
import { StopControl } from "./stopControl.js";
import { WaczPlan } from "./waczPlan.js";
import { CaptureHistory } from "../dedupe/captureHistory.js";
import { ChangeReport, type ChangeSummary } from "./changeReport.js";
import { PageAdmission } from "../scope/admission.js";
import { RobotsTxt } from "../robots/robotsTxt.js";
import { startSitemapReading } from "../sitemap/sitemapSeeds.js";

export interface CrawlOutcome {
  exitCode: ExitCodeValue;
  stats: CrawlStats;
  waczPaths: string[];
  /** One line saying why the crawl failed (exit code 1). */
  failure: string | null;
}

export interface CrawlStats {
  crawlId: string;
  crawled: number;
  failed: number;
  /** Failed page attempts, those that were retried included. */
  failedAttempts: number;
  queued: number;
  pending: number;
  total: number;
  limit: { max: number; hit: boolean };
  bytesWritten: number;
  elapsedSeconds: number;
  status: "done" | "interrupted" | "limit-reached" | "failed" | "failed-limit";
  committed: boolean;
  /** This process's writer slot (several processes on one crawl each have one). */
  writer: number;
  browserLaunches: number;
  /** With --refresh / --skipFreshDays: pages per kind of change since the archived captures (the URLs are in changeReport). */
  changes?: ChangeSummary;
  changeReport?: string;
  /** Pages this process crawled whose bodies stayed cut off after every retry (stored WARC-Truncated). */
  truncated: { count: number; report: string };
  /** Pages not crawled because robots.txt disallows them (--robots). */
  skippedRobots: number;
  /** Pages this process crawled whose behaviors finished / timed out, and the seconds they ran. */
  behaviors: BehaviorTally;
}

/**
 * A crawl, start to finish: page -> exchanges -> records -> WARC -> index -> WACZ -> commit.
 * Opens Redis and the browser, runs the workers until the shared queue is drained or a stop is asked
 * for, then packages what this process captured.
 */
export async function runCrawl(options: CrawlOptions, stop = new StopControl()): Promise<CrawlOutcome> {
  const started = Date.now();
  const paths = collectionPaths(options.cwd, options.collection);
  try {
    createCollectionDirs(paths);
  } catch (err) {
    throw new Error(`cannot create the output folder ${paths.root}: ${storageErrorMessage(err)}`);
  }
  logger.attachFile(join(paths.logs, `crawl-${timestamp14(new Date())}-${process.pid}.log`));

  const processId = newProcessId(randomUUID().slice(0, 8));
  const { redis, embedded } = await openStateRedis(options, paths);
  let dedupeRedis: Redis | null = null;
  let browserHost: BrowserHost | null = null;
  let liveness: Liveness | null = null;
  const membership = new Membership(redis, options.crawlId, processId);
  const state = new CrawlState(redis, membership);
  try {
    dedupeRedis = await connectRedis(options.redisDedupeUrl ?? urlOf(redis), options.redisDedupeUrl ? "dedupe Redis (--redisDedupeUrl)" : "dedupe index Redis", { failFast: true });
    const dedupe = new DedupeIndex(dedupeRedis, options.crawlId);
    await dedupe.registerCrawl();
    const dependencies = new DependencyTracker(redis, state.keys, options.crawlId);

    liveness = new Liveness(membership, (message) => stop.fatal(message));
    await liveness.start();
    await state.setStatus("running");
    const reaped = await membership.reapLocalDeadProcesses();
    if (reaped.length) logger.info("crawl", "taking over from crawler processes of this machine that died", { processes: reaped });
    const slots = new WriterSlots(redis, membership, paths.archive);
    const slot = await slots.claim();
    const plan = new WaczPlan(redis, state.keys, dedupe, { collection: options.collection, rolloverSize: options.rolloverSize, writer: writerName(slot) });
    await plan.load();
    const pageList = new PageList(paths.pages, `${options.collection}.wacz`, options.text.includes("to-pages"));
    const report = new ChangeReport(join(paths.root, "reports", slot === 0 ? "changes.jsonl" : `changes-${writerName(slot)}.jsonl`), redis,
      { kinds: state.keys.changeKinds(writerName(slot)), counts: state.keys.changeCounts(writerName(slot)) });

    // WARC files cut short by a writer that died end at their last whole record again.
    const repairWarcs = async () => {
      // A writer is repaired only once it is fenced: should it be merely stalled, it will not write on.
      const alive = async (owner: string) => !(await membership.fenceIfDead(owner));
      for (const repaired of await repairUnfinishedWarcs(paths.archive, alive)) {
        logger.warn("writer", "repaired a WARC file left unfinished by a crawler that died", { ...repaired });
      }
    };
    await repairWarcs();

    const scopes = options.seeds.map((seed, i) => new SeedScope(seed, options.seedScopes[i]));
    const robotsTxt = new RobotsTxt({ userAgent: options.userAgent, agent: options.robots?.agent ?? "*" });
    const admission = new PageAdmission(state, options.limit, options.robots ? robotsTxt : null);
    for (const [seedId, scope] of scopes.entries()) {
      await admission.admit({ url: scope.url, depth: 0, seedId, extraHops: 0 });
    }
    logger.milestone("crawl", "crawl started", { crawlId: options.crawlId, processId, seeds: options.seeds, collection: options.collection });

    const writer = new WarcWriter({
      dir: paths.archive,
      filenamePrefix: `rec-${options.crawlId}`,
      rolloverSize: options.rolloverSize,
      owner: processId,
      beforeWrite: () => liveness!.assertLive(),
      warcinfo: {
        software: SOFTWARE,
        format: "WARC File Format 1.1",
        conformsTo: "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "crawl-id": options.crawlId,
        ...(options.title ? { title: options.title } : {}),
      },
      onFileOpened: async (filename) => void (await plan.assignWarc(filename)),
      onFileClosed: (filename, size) => plan.warcClosed(filename, size),
    });
    const deduplicator = new Deduplicator(dedupe, dependencies, options.dedupeMinSize, (filename) => plan.isOwnWacz(filename));
    const history = new CaptureHistory(dedupeRedis, options.crawlId);
    const recorder = new ExchangeRecorder(writer, new ExchangeClaims(redis, membership), deduplicator, (warc) => plan.waczOf(warc), history);
    stop.watchLimits({ timeLimitSeconds: options.timeLimit, sizeLimitBytes: options.sizeLimit, bytesWritten: () => writer.bytesWritten });

    browserHost = new BrowserHost({ executablePath: options.browserPath, headless: options.headless, userAgent: options.userAgent, recordsDir: paths.browsers });
    await browserHost.browser();
    const host = browserHost;
    stop.onImmediate(() => void host.closeAllPages());
    const sitemapClaim = new SitemapClaim(redis, membership);
    const context: PageContext = {
      options, state, membership, history, report, scopes, pageList, stop, admission, sitemapClaim, hostPacing: new HostPacing(redis, state.keys),
      truncated: { count: 0, report: join(paths.root, "reports", slot === 0 ? "truncated.jsonl" : `truncated-${writerName(slot)}.jsonl`) },
      currentWacz: () => plan.currentWaczFilename(),
      pageResources: new PageResourceRecorder(writer),
      behaviors: emptyTally(),
    };
    const workers = Array.from({ length: options.workers }, (_, i) =>
      new PageWorker(i, host, {
        pageLoadTimeoutMs: options.pageLoadTimeout * 1000,
        netIdleWaitMs: options.netIdleWait * 1000,
        userAgent: options.userAgent,
        extracts: extractOptionsOf(options),
        behaviors: { enabled: options.behaviors, timeoutMs: options.behaviorTimeout * 1000, postLoadDelayMs: options.postLoadDelay * 1000 },
        hasStoredResponse: (url) => recorder.hasStoredResponse(url),
        storeExchange: async (exchange) => {
          try {
            const outcome = await recorder.record(exchange);
            if (outcome.kind !== "skipped") logger.debug("writer", `${outcome.kind} stored`, describeExchange(exchange));
          } catch (err) {
            if (isStorageError(err)) stop.fatal(`cannot write to ${paths.archive}: ${storageErrorMessage(err)}`);
            throw err;
          }
        },
      }),
    );

    const progress = new CrawlProgressBar();
    let ticks = 0;
    const progressTimer = setInterval(() => {
      const logStats = options.logging.includes("stats") && ++ticks % 30 === 0;
      void state.counts().then((c) => {
        progress.update({ ...c, bytesWritten: writer.bytesWritten });
        if (logStats) logger.info("stats", "crawl statistics", { ...c, bytesWritten: writer.bytesWritten });
      }, () => undefined);
    }, 1000);
    const sitemapReading = options.sitemap ? await startSitemapReading(options.sitemap, { claim: sitemapClaim, admission, scopes, robotsTxt, stop, userAgent: options.userAgent }) : null;
    try {
      const local: LocalWork = { active: new Set(), taking: 0 };
      await Promise.all(workers.map((worker) => workLoop(worker, context, local)));
      await sitemapReading?.finished;
    } finally {
      clearInterval(progressTimer);
      progress.stop();
      await Promise.all(workers.map((w) => w.close()));
      await writer.close().catch((err: unknown) => stop.fatal(`cannot finish ${paths.archive}: ${storageErrorMessage(err)}`));
      await withTimeout(host.close(), BROWSER_CLOSE_DEADLINE_MS, "Chromium did not close").catch((err: unknown) => logger.warn("browser", errorMessage(err)));
      stop.pagesClosed = true;
    }

    const counts = await state.counts();
    const finished = counts.queued === 0 && counts.pending === 0;
    let status: CrawlStats["status"] =
      stop.reason === "signal" ? "interrupted" : stop.reason === "failed-limit" ? "failed-limit" : finished ? "done" : "limit-reached";
    let failure: string | null = stop.fatalError;
    if (failure) status = "failed";
    else if (counts.done === 0 && counts.failed > 0) {
      const failures = await state.failedPages();
      status = "failed";
      failure = `no page could be crawled: ${failures[0]?.url} failed: ${failures[0]?.reason}`;
      logger.error("crawl", failure, { failures });
    } else if (finished && counts.done === 0 && counts.skippedRobots > 0) {
      status = "failed";
      failure = `no page could be crawled: robots.txt disallows every seed (--robots)`;
      logger.error("crawl", failure, { skippedRobots: counts.skippedRobots });
    }

    const assertOwner = () => liveness!.assertLive();
    const packaging = { options, archiveDir: paths.archive, outputDir: paths.root, pageList, dedupe, dependencies, reportFile: report.path, assertOwner };
    let waczPaths: string[] = [];
    if (options.generateWACZ && !stop.fatalError) {
      await pauseForTests("before-package");
      try {
        waczPaths = (await packageWaczFiles({ ...packaging, plan })).map((r) => r.path);
      } catch (err) {
        if (!isStorageError(err) && !(err instanceof DedupeIndexUnavailableError)) throw err;
        failure = isStorageError(err) ? `cannot write the WACZ in ${paths.root}: ${storageErrorMessage(err)}` : `WACZ files not finished: ${errorMessage(err)}`;
        status = "failed";
        logger.error("wacz", failure);
      }
    }
    // Only a crawl that ran to the end joins the merged index, once every process on it has packaged
    // its files (this one packages those of processes that died); interrupted or limited crawls stay
    // uncommitted and can be resumed.
    let committed = false;
    if (!failure) {
      await slots.markPackaged(slot);
      if (status === "done") {
        waczPaths.push(...(await packageOrphans(membership, slots, async (orphan) => {
          await repairWarcs();
          if (!options.generateWACZ) return [];
          const orphanPlan = new WaczPlan(redis, state.keys, dedupe, { collection: options.collection, rolloverSize: options.rolloverSize, writer: writerName(orphan) });
          return packageWaczFiles({ ...packaging, plan: orphanPlan });
        })));
        if (await slots.allPackaged()) {
          await pauseForTests("before-commit");
          committed = await commitFinishedCrawl(dedupe);
        }
        else logger.info("crawl", "other crawler processes are still packaging; the last one commits the crawl");
      }
    }

    const stats: CrawlStats = {
      crawlId: options.crawlId,
      crawled: counts.done,
      failed: counts.failed,
      failedAttempts: counts.failedAttempts,
      queued: counts.queued,
      pending: counts.pending,
      total: counts.seen,
      limit: { max: options.limit, hit: options.limit > 0 && counts.seen >= options.limit },
      bytesWritten: writer.bytesWritten,
      elapsedSeconds: Math.round((Date.now() - started) / 100) / 10,
      status,
      committed,
      writer: slot,
      browserLaunches: host.launches,
      truncated: { ...context.truncated },
      skippedRobots: counts.skippedRobots,
      behaviors: { ...context.behaviors },
      ...(options.refresh || options.skipFreshDays > 0 ? { changes: await report.summary(), changeReport: report.path } : {}),
    };
    await state.setStatus(stats.status);
    if (options.statsFilename) writeFileSync(options.statsFilename, JSON.stringify(stats, null, 2) + "\n");
    logger.milestone("crawl", `crawl ${stats.status}`, { ...stats }, crawlSummary(stats));
    const exitCode =
      status === "failed" ? ExitCode.Failed
      : status === "interrupted" ? ExitCode.Interrupted
      : status === "failed-limit" ? ExitCode.FailedLimit
      : ExitCode.Finished;
    return { exitCode, stats, waczPaths, failure };
  } finally {
    liveness?.stop();
    await withTimeout(browserHost?.close() ?? Promise.resolve(), BROWSER_CLOSE_DEADLINE_MS, "Chromium did not close").catch(() => undefined);
    await withTimeout(membership.clearHeartbeat(), 5000, "heartbeat not cleared").catch(() => undefined);
    dedupeRedis?.disconnect();
    redis.disconnect();
    await embedded?.stop();
  }
}

const BROWSER_CLOSE_DEADLINE_MS = 15_000;

/**
 * Package the files of writers that died before packaging (their heartbeat expires within ~15 s, so wait
 * that long for slots whose owner may be gone but not yet known to be). Only files in this process's
 * archive folder can be packaged here; a dead writer of another folder must be run again to package its
 * own, and until then the crawl is not committed (its records would otherwise be silently left out).
 */
async function packageOrphans(
  membership: Membership,
  slots: WriterSlots,
  packageSlot: (slot: number) => Promise<{ path: string }[]>,
): Promise<string[]> {
  const paths: string[] = [];
  const deadline = Date.now() + 20_000;
  let unreachable: UnreachableWriter[] = [];
  while (!(await slots.allPackaged()) && Date.now() < deadline) {
    await membership.reapLocalDeadProcesses();
    const adoption = await slots.adoptOrphan();
    unreachable = adoption.unreachable;
    if (adoption.slot === null) {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    logger.info("crawl", "packaging the files of a crawler process that died", { writer: adoption.slot });
    paths.push(...(await packageSlot(adoption.slot)).map((r) => r.path));
    await slots.markPackaged(adoption.slot);
  }
  for (const writer of unreachable) {
    logger.error("crawl", "a crawler process died before packaging its WACZ files, which are not in this archive folder: run that crawler again (the same command, on that machine) to package them; the crawl is committed then", {
      writer: writer.slot, home: writer.home, warcFiles: writer.missingWarcs.length,
    });
  }
  return paths;
}

/** Pages this process's workers are loading now, and takes in flight (see recoverOwnOrphans). */
interface LocalWork {
  active: Set<string>;
  taking: number;
}

/** Take pages from the shared queue until it is drained everywhere or a stop is asked for. */
async function workLoop(worker: PageWorker, context: PageContext, local: LocalWork): Promise<void> {
  const { state, stop, options } = context;
  while (!stop.requested) {
    local.taking += 1;
    let page;
    try {
      page = await state.take();
    } finally {
      local.taking -= 1;
    }
    if (!page) {
      const counts = await state.counts();
      // Pages of the sitemaps may still come while they are being read (by this or another process).
      if (counts.queued === 0 && counts.pending === 0 && !(await context.sitemapClaim.inProgress())) return;
      // Others are still busy, a retry waits out its backoff, or a dead process holds leases: look for
      // abandoned pages (of dead processes, and of this one's own attempts that ended unsettled), then wait.
      await context.membership.reapLocalDeadProcesses();
      await state.recoverAbandoned(options.maxPageRetries);
      if (local.taking === 0) {
        for (const url of await state.recoverOwnOrphans(new Set(local.active), options.maxPageRetries)) {
          logger.warn("page", "page attempt ended without settling its lease: put back", { url });
        }
      }
      const retryDue = await state.nextRetryDueInMs();
      await stop.sleep(Math.min(500, retryDue ?? 500));
      continue;
    }
    local.active.add(page.url);
    try {
      await crawlPage(worker, page, context);
    } catch (err) {
      // Whatever went wrong (Redis, the page list), the page's lease must not stay with this process.
      logger.error("page", "page attempt failed unexpectedly", { url: page.url, error: errorMessage(err) });
      await worker.reset();
      await state.markFailed(page.url, `crawler error: ${errorMessage(err)}`, options.maxPageRetries).catch(() => undefined);
    } finally {
      local.active.delete(page.url);
    }
  }
}

async function openStateRedis(
  options: CrawlOptions,
  paths: CollectionPaths,
): Promise<{ redis: Redis; embedded: EmbeddedRedis | null }> {
  if (options.redisStoreUrl) return { redis: await connectRedis(options.redisStoreUrl, "crawl-state Redis (--redisStoreUrl)"), embedded: null };
  const embedded = new EmbeddedRedis({ dataDir: paths.redisData, persist: true });
  const url = await embedded.start();
  logger.info("redis", "embedded redis-server started", { url, dataDir: paths.redisData });
  try {
    return { redis: await connectRedis(url, "embedded redis-server"), embedded };
  } catch (err) {
    await embedded.stop();
    throw err;
  }
}

/** The URL an open connection was made with (to open a second connection to the same server). */
function urlOf(redis: Redis): string {
  const { host, port, db, password, username } = redis.options;
  const auth = password ? `${encodeURIComponent(username ?? "")}:${encodeURIComponent(password)}@` : "";
  return `redis://${auth}${host}:${port}/${db ?? 0}`;
}

export function timestamp14(date: Date): string {
  return date.toISOString().replace(/[-:T]/g, "").slice(0, 14);
}
