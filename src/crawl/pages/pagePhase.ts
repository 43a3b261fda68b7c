import { clickClaims, emptyTally, type BehaviorTally } from "../../behaviors/behaviors.js";
import { startBrowserDebugAccess } from "../../browser/debugAccess.js";
import { BrowserHost } from "../../browser/browserHost.js";
import { EarlierAttempts } from "../../capture/requests/earlierAttempts.js";
import { TemplateBook } from "../../hybrid/templateBook.js";
import { HybridCapture } from "./hybridLoad.js";
import { PageWorker } from "../../page/pageWorker.js";
import { setupChromiumArgs, tabSetupFor } from "../../browser/pageSetup.js";
import { browserSetupOf } from "../../config/groups/pageLoadOptions.js";
import { NO_LIVE_WORKER, type LiveView, type LiveWorker } from "../../screencast/liveView.js";
import { packInto, pendingProfileFile, unpackInto } from "../../profile/crawlProfile.js";
import { errorMessage, logger } from "../../log/logger.js";
import { CrawlProgressBar, type ProgressFigures } from "../../log/progress.js";
import { SeedScopes } from "../../scope/seedScopes.js";
import { startSitemapReading, type SitemapReading } from "../../sitemap/sitemapSeeds.js";
import type { Frontier } from "../../frontier/frontier.js";
import { ExtraSeeds } from "../../frontier/extraSeeds.js";
import { HostPacing } from "../../politeness/hostPacing.js";
import type { Membership } from "../../state/membership/membership.js";
import { SitemapClaim } from "../../state/sitemapClaim.js";
import { withTimeout } from "../../util/deadline.js";
import { pauseForTests } from "../../util/testSeams.js";
import { storageErrorMessage } from "../../util/storageErrors.js";
import { crawlPage, extractOptionsOf, type PageContext } from "./crawlPage.js";
import type { CrawlRun } from "../crawlRun.js";
import { DiscardingSink } from "../../pipeline/dryRunSink.js";
import { ByteTallySink } from "../../budgets/byteTally.js";
import type { Seeding } from "../seeds.js";
import type { StopControl } from "../stopControl.js";
import { StorageWatch } from "../storageWatch.js";
import { IdleWorkers } from "./idleWorkers.js";

/** What the page phase leaves for the stats. */
export interface PagePhaseResult {
  /** Pages whose bodies stayed cut off after every retry, and where they are listed. */
  truncated: { count: number; report: string };
  behaviors: BehaviorTally;
  browserLaunches: number;
  /** Bodies kept short on purpose: at --maxResourceSize or a storage limit (length), streams open at their page's end (time). */
  bodiesCutShort: { length: number; time: number };
}

const BROWSER_CLOSE_DEADLINE_MS = 15_000;

/**
 * The page phase: one Chromium with --workers tabs takes pages from the shared queue (and, with
 * --useSitemap, the sitemaps' pages as they are read) until the queue is drained everywhere or a stop
 * is asked for; then tabs, the WARC file and the browser are closed, each within a deadline.
 */
export async function crawlPages(run: CrawlRun, seeding: Seeding): Promise<PagePhaseResult> {
  const { options, session, pipeline, stop } = run;
  const limits = new StorageWatch({
    maxResourceSize: options.maxResourceSize, sizeLimit: options.sizeLimit, diskUtilization: options.diskUtilization,
    dir: run.paths.root, bytesWritten: () => pipeline.writer.bytesWritten,
  }, stop);
  limits.start();
  const setup = browserSetupOf(options);
  const profile = options.profile.archive;
  if (profile) logger.info("browser", "browsers start from a profile", { loginUrl: options.profile.loginUrl });
  const host = new BrowserHost({
    executablePath: options.browserPath, headless: options.headless, userAgent: options.userAgent, extraArgs: setupChromiumArgs(setup), recordsDir: run.paths.browsers,
    ...(profile ? { prepareProfile: unpackInto(profile) } : {}),
    ...(options.profile.saveProfile ? { beforeRemove: packInto(pendingProfileFile(options.profile.saveProfile)) } : {}),
    onRestart: () => run.watch.browserRestarted(),
    socketGate: run.context.socketGate,
  });
  const debugAccess = options.debugging.debugAccessBrowser ? await startBrowserDebugAccess(async () => (await host.browser()).wsEndpoint()) : null;
  try {
    const tabSetup = await tabSetupFor(await host.browser(), setup);
    stop.onImmediate(() => void host.closeAllPages());
    const context: PageContext = {
      options, stop, state: session.state, history: pipeline.history, notes: pipeline.notes, report: run.report, pageList: run.pageList, plan: pipeline.plan,
      pageResources: pipeline.pageResources, scopes: new SeedScopes(seeding.scopes, new ExtraSeeds(session.redis, session.membership.keys)), admission: seeding.admission, hostPacing: new HostPacing(session.redis, session.membership.keys),
      robots: options.robots ? seeding.robotsTxt : null,
      truncated: { count: 0, report: run.truncatedReport },
      behaviors: emptyTally(),
      watch: run.watch,
      budgets: seeding.budgets,
      hybrid: null,
    };
    const { selectLinks, linkKinds, clickSelector, customBehaviors, userFlows, autoscrollMaxRounds } = options.linkBehavior;
    const claimClick = clickClaims();
    // As in browsertrix-crawler, a custom behavior is a site-specific one: it runs only with those.
    if ((customBehaviors.length || userFlows.length) && !options.behaviors.includes("siteSpecific")) {
      logger.warn("behavior", "--customBehaviors are loaded but never run: --behaviors does not include siteSpecific", { behaviors: options.behaviors });
    }
    if (options.lifecycle.dryRun) logger.warn("crawl", "--dryRun: no archive data is written (no WARC, no WACZ), only the pages lists and the logs");
    const sink = options.lifecycle.dryRun ? new DiscardingSink() : pipeline.sink;
    // Each worker's sink counts what its page writes (a seed's size budget, reports/seeds.jsonl).
    const tallies = Array.from({ length: options.workers }, () => new ByteTallySink(sink));
    // What each page's attempts stored, for its retries in this process (whichever tab takes them).
    const earlierAttempts = new EarlierAttempts();
    const workers = Array.from({ length: options.workers }, (_, i) =>
      new PageWorker(i, host, tallies[i], {
        pageLoadTimeoutMs: options.pageLoadTimeout * 1000,
        netIdleWaitMs: options.netIdleWait * 1000,
        netIdleMaxRequests: options.pageLoad.netIdleMaxRequests,
        waitUntil: options.pageLoad.waitUntil,
        userAgent: tabSetup.userAgent,
        tab: tabSetup.tab,
        extracts: extractOptionsOf(options),
        rateLimitStatusCodes: options.rateLimit.statusCodes,
        tabCapture: { ...options.tabCapture, loginUrl: options.profile.loginUrl },
        behaviors: { enabled: options.behaviors, timeoutMs: options.behaviorTimeout * 1000, postLoadDelayMs: options.postLoadDelay * 1000, clickSelector, customScripts: customBehaviors, userFlows, autoscrollMaxRounds },
        limits,
        linkSelectors: selectLinks,
        linkKinds,
        claimClick,
        contentCheck: options.lifecycle.failOnContentCheck,
        tabWatch: run.live?.worker(i),
        context: run.context,
        earlierAttempts,
        watchQueries: options.capture.mode === "hybrid",
      }),
    );
    if (options.capture.mode === "hybrid" && run.captureReport) {
      // What the tabs send: the crawl's user agent, else the browser's own.
      const userAgent = tabSetup.userAgent ?? (await (await host.browser()).userAgent());
      const identity = { userAgent, ...(tabSetup.tab.acceptLanguage ? { acceptLanguage: tabSetup.tab.acceptLanguage } : {}) };
      context.hybrid = new HybridCapture({
        book: new TemplateBook(session.redis, session.membership.keys, { learnPages: options.capture.learnPages, verifyEvery: options.capture.verifyEvery }),
        report: run.captureReport,
        earlierAttempts,
        loader: { identity, rateLimitStatusCodes: options.rateLimit.statusCodes },
        text: options.text.length > 0,
      });
      logger.info("crawl", "hybrid capture: each template's first pages are browsed, the others fetched without a browser unless its guard says otherwise", { learnPages: options.capture.learnPages, verifyEvery: options.capture.verifyEvery });
    }
    const stopProgress = showProgress(session.state, () => pipeline.writer.bytesWritten, options.logging.includes("stats"), run.live);
    const sitemapClaim = new SitemapClaim(session.redis, session.membership);
    try {
      const sitemap = options.sitemap;
      const readSitemaps = sitemap
        ? () => startSitemapReading(sitemap, { claim: sitemapClaim, admission: seeding.admission, scopes: seeding.scopes, robotsTxt: seeding.robotsTxt, stop, userAgent: options.userAgent, rules: run.context })
        : null;
      const loop: WorkLoop = { context, membership: session.membership, sitemapClaim, active: new Set(), taking: 0, idle: new IdleWorkers(), readSitemaps, sitemapReadings: [] };
      if (readSitemaps) loop.sitemapReadings.push((await readSitemaps()).finished);
      await Promise.all(workers.map((worker, i) => workLoop(worker, tallies[i], loop, run.live?.worker(i) ?? NO_LIVE_WORKER)));
      await Promise.all(loop.sitemapReadings);
    } finally {
      stopProgress();
      await context.hybrid?.close();
      await Promise.all(workers.map((w) => w.close()));
      await pipeline.close().catch((err: unknown) => stop.fatal(`cannot finish ${run.paths.archive}: ${storageErrorMessage(err)}`, err));
    }
    return { truncated: { ...context.truncated }, behaviors: { ...context.behaviors }, browserLaunches: host.launches, bodiesCutShort: { ...limits.cutShort } };
  } finally {
    limits.dispose();
    await debugAccess?.close();
    await withTimeout(host.close(), BROWSER_CLOSE_DEADLINE_MS, "Chromium did not close").catch((err: unknown) => logger.warn("browser", errorMessage(err)));
    stop.pagesClosed = true;
  }
}

/** The progress bar (on a terminal) and the live view's figures every second, and with --logging stats a statistics line every 30 s. */
function showProgress(state: Frontier, bytesWritten: () => number, logStats: boolean, live: LiveView | null): () => void {
  const progress = new CrawlProgressBar();
  let ticks = 0;
  let asking = false;
  const timer = setInterval(() => {
    const logNow = logStats && ++ticks % 30 === 0;
    if (asking) return; // Redis is away: one question waiting for it is enough
    asking = true;
    void state.counts().then((c) => {
      const figures: ProgressFigures = { ...c, bytesWritten: bytesWritten() };
      progress.update(figures);
      live?.progress(figures);
      if (logNow) logger.info("stats", "crawl statistics", { ...c, bytesWritten: bytesWritten() });
    }, () => undefined).finally(() => (asking = false));
  }, 1000);
  return () => {
    clearInterval(timer);
    progress.stop();
  };
}

/** What this process's workers share: pages they are loading now, and takes in flight (see recoverOwnOrphans). */
interface WorkLoop {
  context: PageContext;
  membership: Membership;
  sitemapClaim: SitemapClaim;
  active: Set<string>;
  taking: number;
  /** Where workers that found nothing to take wait for a page of this process to end. */
  idle: IdleWorkers;
  /** --useSitemap: start (or take over) the sitemap reading; resolves with its end. */
  readSitemaps: (() => Promise<SitemapReading>) | null;
  /** Readings this process started (at the start, or taken over from a reader that died). */
  sitemapReadings: Promise<void>[];
  /** A worker is checking whether the sitemap reading must be taken over. */
  checkingSitemap?: boolean;
}

/** Take pages from the shared queue until it is drained everywhere or a stop is asked for. */
async function workLoop(worker: PageWorker, tally: ByteTallySink, loop: WorkLoop, live: LiveWorker): Promise<void> {
  try {
    await takePages(worker, tally, loop, live);
  } finally {
    live.done();
  }
}

async function takePages(worker: PageWorker, tally: ByteTallySink, loop: WorkLoop, live: LiveWorker): Promise<void> {
  const { state, stop, options } = loop.context;
  while (!stop.requested) {
    const idleMark = loop.idle.mark();
    loop.taking += 1;
    let page;
    try {
      page = await state.take();
    } finally {
      loop.taking -= 1;
    }
    if (!page) {
      if (await crawlIsDrained(state, loop.sitemapClaim)) return;
      live.waiting();
      await recoverWork(loop, stop, idleMark);
      continue;
    }
    loop.active.add(page.url);
    live.pageStarted(page.url);
    try {
      await crawlPage(worker, page, loop.context, tally);
    } catch (err) {
      // Whatever went wrong (Redis, the page list), the page's lease must not stay with this process.
      logger.error("page", "page attempt failed unexpectedly", { url: page.url, error: errorMessage(err) });
      await worker.reset();
      const reason = `crawler error: ${errorMessage(err)}`;
      const outcome = await state.markFailed(page.url, reason, options.maxPageRetries).catch(() => "not-owner" as const);
      loop.context.watch.attemptFailed(page, outcome, reason); // health, metrics, --failOnFailedSeed, as any failed attempt
    } finally {
      loop.active.delete(page.url);
      live.pageEnded();
      loop.idle.pageEnded();
    }
  }
}

/** The process reading the sitemaps died before the end: read them here (its heartbeat is gone, so the claim passes). */
async function resumeOrphanedSitemapReading(loop: WorkLoop): Promise<void> {
  if (!loop.readSitemaps || loop.checkingSitemap) return;
  loop.checkingSitemap = true;
  try {
    if ((await loop.sitemapClaim.state()) !== "orphaned") return;
    logger.warn("sitemap", "the process reading the sitemaps is gone before the end: reading them here");
    loop.sitemapReadings.push((await loop.readSitemaps()).finished);
  } finally {
    loop.checkingSitemap = false;
  }
}

/**
 * No sitemap still being read (by this or another process), and then nothing queued or in progress
 * anywhere. In that order: a reading ends only once its pages are queued, so a queue found empty after
 * it ended stays empty; looked at first, the queue could be empty just before a reading queued its last
 * pages and ended, and the crawl would end with them queued.
 */
async function crawlIsDrained(state: Frontier, sitemapClaim: SitemapClaim): Promise<boolean> {
  if (await sitemapClaim.inProgress()) return false;
  await pauseForTests("drain-check");
  return state.frontierEmpty();
}

/**
 * Others are still busy, a retry waits out its backoff, or a dead process holds leases: take back
 * abandoned pages (of dead processes, and of this one's own attempts that ended unsettled), then wait.
 */
async function recoverWork(loop: WorkLoop, stop: StopControl, idleMark: number): Promise<void> {
  const { state, options } = loop.context;
  await loop.membership.reapLocalDeadProcesses(state);
  await resumeOrphanedSitemapReading(loop);
  await state.recoverAbandoned(options.maxPageRetries);
  if (loop.taking === 0) {
    for (const url of await state.recoverOwnOrphans(new Set(loop.active), options.maxPageRetries)) {
      logger.warn("page", "page attempt ended without settling its lease: put back", { url });
    }
  }
  const retryDue = await state.nextRetryDueInMs();
  await loop.idle.wait(idleMark, Math.min(500, retryDue ?? 500), (ms, until) => stop.sleep(ms, until));
}
