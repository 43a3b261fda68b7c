import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { addToTally, type BehaviorTally } from "../../behaviors/behaviors.js";
import { extractBudgetMs, type ExtractOptions } from "../../page/pageExtracts.js";
import type { PageLoadResult } from "../../page/pageWorker.js";
import type { PageWorker } from "../../page/pageWorker.js";
import { DOWNLOAD_GRACE_MS } from "../../capture/pageAttempt.js";
import type { CrawlOptions } from "../../config/crawlOptions.js";
import type { CaptureHistory } from "../../dedupe/captureHistory.js";
import type { NoteBacklog } from "../../dedupe/notes/noteBacklog.js";
import { outlinksNote } from "../../dedupe/notes/indexNotes.js";
import { errorMessage, logger } from "../../log/logger.js";
import { pageInfoResource, TEXT_CONTENT_TYPE, type PageResource, type PageResourceRecorder } from "../../pipeline/pageResources.js";
import type { WaczPlan } from "../../pipeline/waczPlan.js";
import type { PageAdmission } from "../../scope/admission.js";
import type { SeedScope } from "../../scope/seedScope.js";
import type { SeedScopes } from "../../scope/seedScopes.js";
import { withoutHash } from "../../scope/urls.js";
import type { CrawlState, QueuedPage } from "../../state/crawlState.js";
import type { HostPacing } from "../../state/hostPacing.js";
import type { RobotsTxt } from "../../robots/robotsTxt.js";
import type { SeedBudgets } from "../../state/seedBudgets.js";
import type { ByteTallySink } from "../../pipeline/byteTally.js";
import { withTimeout } from "../../util/process.js";
import { isStorageError, storageErrorMessage } from "../../util/storageErrors.js";
import type { ChangeReport } from "../../reports/changeReport.js";
import type { CrawlWatch } from "../crawlWatch.js";
import type { PageList } from "../../reports/pageList.js";
import { settleRateLimited } from "./rateLimit.js";
import { followSeedRedirect } from "./seedRedirect.js";
import { conditionalRequest, isFresh, latestCapture, previousOf, reportChange } from "./refresh.js";
import { skipDuplicatePage, skippedAtPageLimit, skipsIfArchived } from "./pageDedupe.js";
import { startsWithinBudget } from "./pageBudget.js";
import type { StopControl } from "../stopControl.js";

/** What crawling a page reads and writes besides the page itself. */
export interface PageContext {
  options: CrawlOptions;
  state: CrawlState;
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
}

/**
 * Crawl one leased page: load and capture it, list it, queue its in-scope links, settle its lease. `tally`
 * counts the WARC bytes the worker writes for it (its seed's size).
 */
export async function crawlPage(worker: PageWorker, page: QueuedPage, context: PageContext, tally: ByteTallySink): Promise<void> {
  tally.take();
  if (await skippedAtPageLimit(page, context.options, context.state, context.admission)) return;
  if (!(await startsWithinBudget(page, context))) return;
  let crawled = false;
  try {
    crawled = await crawlBudgetedPage(worker, page, context, tally);
  } finally {
    // Not crawled (failed, retried, put back...): its budget slot is free again, what it wrote still counts.
    if (!crawled) await context.budgets.release(page, tally.take()).catch((err: unknown) => logger.warn("page", "cannot give back the page's budget slot", { url: page.url, error: errorMessage(err) }));
  }
}

/** A page holding its budget slot: true once it is crawled (counted as a page of its seed and host). */
async function crawlBudgetedPage(worker: PageWorker, page: QueuedPage, context: PageContext, tally: ByteTallySink): Promise<boolean> {
  const { state, options, scopes } = context;
  let seed = { scope: await scopes.of(page.seedId), seedId: page.seedId };
  const previous = options.refresh || options.skipFreshDays > 0 ? await latestCapture(page.url, context.history) : null;
  if (previous && isFresh(previous, options.skipFreshDays)) {
    // Archived recently enough: not fetched, but its archived links are still followed.
    await context.report.add({ url: page.url, change: "skipped-fresh", status: null, digest: null, previous: previousOf(previous) });
    await enqueueLinks(previous.outlinks ?? [], page, context, seed.scope);
    const settled = await state.markDone(page.url);
    if (settled) await context.budgets.finished(page, tally.take());
    logger.info("page", "page skipped (fresh)", { url: page.url, archived: previous.date });
    return settled;
  }
  // The tab first: a host's turn (--minHostInterval, Crawl-delay) then starts the page's request, not a tab's start.
  // A tab that fails to get ready fails the attempt below, where load asks for it again.
  await withTimeout(worker.readyTab(), options.pageLoadTimeout * 1000, "tab not ready").catch(() => undefined);
  if (!(await waitForHostTurn(page.url, context))) return false;
  logger.debug("page", "loading page", { url: page.url, depth: page.depth, worker: worker.id });
  const loadStarted = performance.now();

  let result;
  try {
    const conditional = options.refresh && previous ? conditionalRequest(previous) : undefined;
    const lastAttempt = (await state.failedAttemptsOf(page.url)) >= options.maxPageRetries;
    const deadline = hardPageDeadlineMs(options);
    result = await context.stop.untilAbandoned(
      withTimeout(worker.load(page.url, { conditional, lastAttempt, skipIfArchived: skipsIfArchived(page, options) }), deadline, `page did not finish within ${Math.round(deadline / 1000)}s`),
    );
  } catch (err) {
    result = { document: null, title: "", links: [], error: errorMessage(err), truncated: [] };
  }
  if (result.contentCheckFailed !== undefined) {
    // The crawl fails; the page is not crawled (a rerun after the cause is fixed takes it again).
    context.watch.contentCheckFailed(page.url, result.contentCheckFailed);
    await state.handBack(page.url);
    return false;
  }
  if (result.loggedOut) {
    await settleLoggedOut(page, result.loggedOut, context);
    return false;
  }
  if (result.rateLimited && !context.stop.immediate) {
    // Not the page, and not a failed attempt: nothing was stored; the host is backed off (first, so that
    // no worker of any process starts another page there meanwhile) and the page waits it out.
    const outcome = await settleRateLimited(page.url, result.rateLimited, { state, hostPacing: context.hostPacing, limits: options.rateLimit });
    await worker.reset();
    context.watch.attemptFailed(page, outcome, result.error);
    await context.watch.rateLimitAnswer(result.rateLimited);
    if (outcome === "failed") await checkFailedLimit(context);
    return false;
  }
  // After a failure the tab is in an unknown state (hung, crashed, showing an error page): the next
  // attempt, of this page or another, gets a fresh one.
  if (!result.document) await worker.reset();
  const invalid = result.document ? context.watch.invalidStatus(result.document.status) : null;
  if (invalid) result = { ...result, document: null, error: invalid };

  if (context.stop.immediate) {
    await state.handBack(page.url);
    return false;
  }
  if (!result.document) {
    const outcome = await state.markFailed(page.url, result.error ?? "not loaded", options.maxPageRetries);
    logger.warn("page", outcome === "failed" ? "page failed" : "page failed, will retry", { url: page.url, error: result.error });
    context.watch.attemptFailed(page, outcome, result.error);
    if (outcome === "failed") await checkFailedLimit(context);
    return false;
  }
  if (result.duplicate) {
    await skipDuplicatePage(page, state, context.admission);
    return false;
  }
  const landedAt = result.document.url;
  if (page.depth === 0 && landedAt !== withoutHash(page.url)) {
    seed = await followSeedRedirect(page.url, landedAt, seed, { state, scopes, addRedirectedSeeds: options.addRedirectedSeeds });
  }

  // A 304 page shows nothing to read links from: its archived outlinks stand for it.
  const notModified = result.document.status === 304 && previous !== null;
  const links = notModified ? previous!.outlinks ?? [] : pageLinks(result.links, seed.scope);
  const entry = {
    id: randomUUID(),
    url: page.url,
    ts: result.document.date.toISOString(),
    title: result.title,
    status: result.document.status,
    mime: result.document.mime,
    depth: page.depth,
    seed: page.depth === 0,
    ...(options.text.includes("to-pages") && typeof result.extracts?.text === "string" ? { text: result.extracts.text } : {}),
  };
  // Listed in the WACZ holding the page's document (a rollover may have opened the next one since).
  const listedIn = result.documentWacz ?? context.plan.currentWaczFilename();
  try {
    // --dryRun: no archive data, text and screenshots included.
    if (!options.lifecycle.dryRun) {
      const written = await context.pageResources.record(page.url, result.document.date, pageResources(page.url, result, options));
      tally.add(written.reduce((sum, record) => sum + record.length, 0));
    }
    await context.pageList.add(entry, listedIn);
    // A seed that redirected is listed under both URLs: the one asked for, and the one replay shows.
    if (entry.seed && landedAt !== withoutHash(page.url)) {
      await context.pageList.add({ ...entry, id: randomUUID(), url: landedAt, text: undefined }, listedIn);
    }
  } catch (err) {
    if (!isStorageError(err)) throw err;
    context.stop.fatal(`cannot write the page list or the page's text and screenshots: ${storageErrorMessage(err)}`, err);
    await state.handBack(page.url);
    return false;
  }

  if (links.length || notModified) {
    await context.notes.write(outlinksNote(page.url, links));
  }
  if (options.refresh) await reportChange(page.url, result.document.status, previous, context.history, context.report);
  const from = { ...page, seedId: seed.seedId };
  const queued = (await enqueueLinks(links, from, context, seed.scope)) + (await enqueueBehaviorLinks(result.behaviorLinks ?? [], from, context, seed.scope));
  // Packaging lists a page only in the WACZ named here (a page listed by a process that lost its lease
  // before this step is listed by whoever crawled it again).
  // A page whose lease was lost meanwhile is counted by the process that crawls it again.
  const settled = await state.markDone(page.url, listedIn);
  if (settled) await context.budgets.finished(page, tally.take());
  context.watch.pageCrawled((performance.now() - loadStarted) / 1000);
  if (result.behaviors) addToTally(context.behaviors, result.behaviors);
  const crawled = { url: page.url, status: result.document.status, title: result.title, depth: page.depth, linksQueued: queued };
  if (result.truncated.length) {
    // Retries did not get every body whole: stored as received (WARC-Truncated), and said so.
    context.truncated.count += 1;
    appendTruncatedReport(context.truncated.report, { url: page.url, truncated: result.truncated });
    logger.warn("page", "page crawled, but truncated: bodies cut off on every attempt are stored marked WARC-Truncated", { ...crawled, truncated: result.truncated });
  } else {
    logger.info("page", "page crawled", crawled);
  }
  if (options.pageExtraDelay > 0) await context.stop.sleep(options.pageExtraDelay * 1000);
  return settled;
}

/** The page's text (--text to-warc), screenshots and, for --qa, its requests, as urn:<kind>:<url> resource records. */
function pageResources(pageUrl: string, { extracts, captured, document }: PageLoadResult, options: CrawlOptions): PageResource[] {
  const resources: PageResource[] = [];
  if (options.output.qa && captured && document) resources.push(pageInfoResource(pageUrl, document.date, captured));
  if (!extracts) return resources;
  if (options.text.includes("to-warc") && extracts.text !== null) {
    resources.push({ kind: "text", contentType: TEXT_CONTENT_TYPE, content: Buffer.from(extracts.text, "utf8") });
  }
  for (const shot of extracts.screenshots) resources.push({ kind: shot.kind, contentType: shot.contentType, content: shot.bytes });
  return resources;
}

function appendTruncatedReport(path: string, entry: { url: string; truncated: string[] }): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    appendFileSync(path, JSON.stringify(entry) + "\n");
  } catch (err) {
    logger.warn("page", "could not list the truncated page in the report", { path, error: errorMessage(err) });
  }
}

async function checkFailedLimit(context: PageContext): Promise<void> {
  const { options, state, stop } = context;
  if (options.failOnFailedLimit > 0 && (await state.counts()).failed >= options.failOnFailedLimit) {
    logger.error("crawl", `${options.failOnFailedLimit} pages failed (--failOnFailedLimit): stopping the crawl`);
    stop.request("failed-limit");
  }
}

/** A wait for a host's turn longer than this puts the page back for later rather than holding the worker. */
const DEFER_HOST_WAIT_OVER_MS = 5000;

/**
 * Wait for this host's turn (--minHostInterval or, with --robots, its robots.txt Crawl-delay if longer; a
 * rate limit's back-off), shared by all processes through Redis. A long back-off puts the page back, due when the host is, and frees the worker for other hosts:
 * returns false then.
 */
async function waitForHostTurn(url: string, context: PageContext): Promise<boolean> {
  const crawlDelayMs = context.robots ? await context.robots.crawlDelayMs(url) : 0;
  const intervalMs = Math.max(Math.round(context.options.minHostInterval * 1000), crawlDelayMs);
  const host = new URL(url).host;
  for (;;) {
    const waitMs = await context.hostPacing.turn(host, intervalMs);
    if (waitMs <= 0 || context.stop.immediate) return true;
    if (waitMs > Math.max(DEFER_HOST_WAIT_OVER_MS, intervalMs)) {
      await context.state.defer(url, waitMs);
      logger.debug("page", "host backed off: page put back until its turn", { url, waitSeconds: waitMs / 1000 });
      return false;
    }
    await context.stop.sleep(waitMs);
  }
}

/** The page's links as its seed's scope tells pages apart: without their #fragment unless --allowHashUrls. */
function pageLinks(links: string[], scope: SeedScope): string[] {
  return scope.allowHash ? links : [...new Set(links.map(withoutHash))];
}

/** The page's in-scope links go to the queue in one batch (one frontier call per shard, not one per link). */
async function enqueueLinks(links: string[], page: QueuedPage, context: PageContext, scope: SeedScope): Promise<number> {
  const found: QueuedPage[] = [];
  for (const link of links) {
    const decision = scope.decide(link, page.depth, page.extraHops);
    if (!decision.inScope) {
      context.admission.outOfScope({ url: link, depth: page.depth + 1, seedId: page.seedId, extraHops: page.extraHops });
      continue;
    }
    found.push({ url: link, depth: page.depth + 1, seedId: page.seedId, extraHops: decision.extraHops });
  }
  return (await context.admission.admitMany(found)).filter((added) => added === "queued").length;
}

/**
 * Links the page's behaviors added: judged by the scope like its other links, or with
 * --alwaysAddBehaviorLinks queued whatever the scope and depth, unless an --exclude matches (as
 * browsertrix-crawler does). Either way the page limit and robots.txt still apply.
 */
async function enqueueBehaviorLinks(links: string[], page: QueuedPage, context: PageContext, scope: SeedScope): Promise<number> {
  const pageKeyed = pageLinks(links, scope);
  if (!context.options.linkBehavior.alwaysAddBehaviorLinks) return enqueueLinks(pageKeyed, page, context, scope);
  const found = pageKeyed.filter((link) => !scope.excludes(link)).map((link) => ({ url: link, depth: page.depth + 1, seedId: page.seedId, extraHops: page.extraHops }));
  return (await context.admission.admitMany(found)).filter((added) => added === "queued").length;
}

/** What each loaded page is asked for besides its traffic (--text, --screenshot). */
export function extractOptionsOf(options: CrawlOptions): ExtractOptions {
  return { text: options.text.length > 0, screenshots: options.screenshot };
}

export function hardPageDeadlineMs(options: CrawlOptions): number {
  // Load, quiet network, post-load delay, behaviors, quiet network again, text and screenshots, the large
  // downloads still arriving when the page was done; plus slack.
  const behaviors = options.behaviors.length ? options.behaviorTimeout + options.netIdleWait : 0;
  return (options.pageLoadTimeout + options.netIdleWait + options.postLoadDelay + behaviors) * 1000 + DOWNLOAD_GRACE_MS + 30_000 + extractBudgetMs(extractOptionsOf(options));
}


/**
 * The page redirected to the login page of the crawl's profile: its session expired (or the site logged it
 * out), and the login form is not the page. Nothing of it was stored. With --failOnContentCheck the crawl
 * fails as for a failed content check (exit 9; the page stays queued for a rerun with a fresh profile);
 * otherwise the page is failed at once (a retry would be sent to the login page again).
 */
async function settleLoggedOut(page: QueuedPage, loggedOut: { url: string; loginPage: string }, context: PageContext): Promise<void> {
  const reason = `logged out: redirected to the login page ${loggedOut.loginPage}`;
  if (context.options.lifecycle.failOnContentCheck) {
    context.watch.contentCheckFailed(page.url, reason);
    await context.state.handBack(page.url);
    return;
  }
  logger.warn("page", "page not archived: it redirected to the login page (the profile's session has expired?)", { url: page.url, loginPage: loggedOut.loginPage });
  const outcome = await context.state.markFailed(page.url, reason, 0);
  context.watch.attemptFailed(page, outcome, reason);
  if (outcome === "failed") await checkFailedLimit(context);
}
