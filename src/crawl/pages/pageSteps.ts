import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import { isRenderedDocumentType } from "../../capture/documentTypes.js";
import { DOWNLOAD_GRACE_MS } from "../../capture/pageAttempt.js";
import type { CrawlOptions } from "../../config/crawlOptions.js";
import { outlinksNote } from "../../dedupe/notes/indexNotes.js";
import { errorMessage, logger } from "../../log/logger.js";
import { extractBudgetMs, type ExtractOptions } from "../../page/pageExtracts.js";
import type { PageLoadResult } from "../../page/pageWorker.js";
import { LoadState } from "../../reports/pageList.js";
import { pageInfoResource, TEXT_CONTENT_TYPE, type PageResource } from "../../pipeline/pageResources.js";
import { withoutHash } from "../../scope/urls.js";
import { waitForHostTurn } from "../../politeness/hostTurn.js";
import { withTimeout } from "../../util/deadline.js";
import { isStorageError, storageErrorMessage } from "../../util/storageErrors.js";
import { GO_ON, type PageAttempt, type PageContext, type PageStep } from "./pageChain.js";
import { skipsIfArchived } from "./pageDedupe.js";
import { enqueueBehaviorLinks, enqueueLinks, linksNotYetFound, pageLinks } from "./pageLinks.js";
import { isFresh, latestCapture, previousOf, refreshRequest, reportChange } from "./refresh.js";
import { followSeedRedirect } from "./seedRedirect.js";

// A page's life, step by step (as a processor chain settles a URI): each step lets the page go on or says
// how the attempt ends; settlePage settles it. What needs no load comes first; then the outcomes of the
// load that end the attempt (content check, logged out, rate limit, stop, failure, duplicate), before the
// page is listed and its links followed.

/** The page result the steps after the load read (the load step always sets one). */
function loaded(attempt: PageAttempt): PageLoadResult {
  if (!attempt.result) throw new Error("page step before the page was loaded");
  return attempt.result;
}

/** The scope the page's links are judged by (the seed step always sets it). */
function seedOf(attempt: PageAttempt): NonNullable<PageAttempt["seed"]> {
  if (!attempt.seed) throw new Error("page step before the page's seed was known");
  return attempt.seed;
}

const step = (name: string, run: PageStep["run"]): PageStep => ({ name, run });

/** With --dedupePagesMinDepth the queue is not capped by --limit (duplicates do not count): a page taken once that many are crawled is skipped. */
const pageLimit = step("page limit", async ({ page, context: { options, state } }) => {
  if (options.dedupeFlags.pagesMinDepth < 0 || options.limit <= 0) return GO_ON;
  if ((await state.counts()).done < options.limit) return GO_ON;
  return { kind: "skipped", reason: "pageLimit", message: "page skipped: page limit reached", details: { url: page.url, limit: options.limit } };
});

/**
 * A slot of the page's seed budget and its host's page cap, taken in one step for every process. A page
 * queued before its seed's budget was spent is skipped (listed in the skipped-pages report with the reason).
 */
const budget = step("budget", async (attempt) => {
  const { page, context } = attempt;
  const refusal = await context.budgets.reserve(page);
  if (!refusal) {
    attempt.budgetHeld = true;
    return GO_ON;
  }
  const message = refusal === "hostPageLimit" ? "page skipped: its host's page cap is reached (--maxPagesPerHost)" : "page skipped: its seed's budget is spent";
  return { kind: "skipped", reason: refusal, message, details: { url: page.url, seedId: page.seedId, reason: refusal } };
});

const seed = step("seed", async (attempt) => {
  attempt.seed = { scope: await attempt.context.scopes.of(attempt.page.seedId), seedId: attempt.page.seedId };
  return GO_ON;
});

/** --refresh, --skipFreshDays: archived recently enough, the page is not fetched, but its archived links are still followed. */
const fresh = step("fresh", async (attempt) => {
  const { page, context } = attempt;
  const { options } = context;
  attempt.previous = options.refresh || options.skipFreshDays > 0 ? await latestCapture(page.url, context.history) : null;
  const previous = attempt.previous;
  if (!previous || !isFresh(previous, options.skipFreshDays)) return GO_ON;
  await context.report.add({ url: page.url, change: "skipped-fresh", status: null, digest: null, previous: previousOf(previous) });
  await enqueueLinks(previous.outlinks ?? [], page, context, seedOf(attempt).scope);
  return { kind: "crawled", listedIn: "", fresh: { archived: previous.date } };
});

/** The tab first: a host's turn (--minHostInterval, Crawl-delay) then starts the page's request, not a tab's start. */
const hostTurn = step("host turn", async ({ worker, page, context }) => {
  // A tab that fails to get ready fails the attempt below, where load asks for it again.
  await withTimeout(worker.readyTab(), context.options.pageLoadTimeout * 1000, "tab not ready").catch(() => undefined);
  const waitMs = await waitForHostTurn(page.url, { hostPacing: context.hostPacing, robots: context.robots, minHostIntervalSeconds: context.options.minHostInterval, stop: context.stop });
  return waitMs === null ? GO_ON : { kind: "deferred", until: { hostTurnInMs: waitMs } };
});

const load = step("load", async (attempt) => {
  const { worker, page, context } = attempt;
  const { options, state } = context;
  logger.debug("page", "loading page", { url: page.url, depth: page.depth, worker: worker.id });
  attempt.loadStarted = performance.now();
  try {
    const conditional = options.refresh && attempt.previous ? await refreshRequest(attempt.previous, context.history) : undefined;
    const failedAttempts = await state.failedAttemptsOf(page.url);
    const lastAttempt = failedAttempts >= options.maxPageRetries;
    const deadline = hardPageDeadlineMs(options);
    const loadOptions = { conditional, lastAttempt, retry: failedAttempts > 0, skipIfArchived: skipsIfArchived(page, options), sink: attempt.tally };
    // --captureMode hybrid: a first attempt's document is fetched without the browser and its template decides; a
    // retry, or a conditional request (--refresh), goes to the browser as in browser mode.
    const hybrid = context.hybrid && !conditional && failedAttempts === 0 ? context.hybrid : null;
    const loading = hybrid ? hybrid.load(worker, page.url, loadOptions, (links) => linksNotYetFound(links, page, context, seedOf(attempt).scope)) : worker.load(page.url, loadOptions);
    const loaded = await context.stop.untilAbandoned(withTimeout(loading, deadline, `page did not finish within ${Math.round(deadline / 1000)}s`));
    if ("waitMs" in loaded) return { kind: "deferred", until: { laterInMs: loaded.waitMs, why: "its template is being learned or verified" } };
    attempt.result = loaded;
  } catch (err) {
    attempt.result = { document: null, title: "", links: [], error: errorMessage(err), truncated: [] };
  }
  return GO_ON;
});

/** The page called the content-check function: the crawl fails; the page is not crawled (a rerun after the cause is fixed takes it again). */
const contentCheck = step("content check", async (attempt) => {
  const reason = loaded(attempt).contentCheckFailed;
  if (reason === undefined) return GO_ON;
  attempt.context.watch.contentCheckFailed(attempt.page.url, reason);
  return { kind: "handedBack" };
});

/**
 * The page redirected to the login page of the crawl's profile: its session expired (or the site logged it
 * out), and the login form is not the page. Nothing of it was stored. With --failOnContentCheck the crawl
 * fails as for a failed content check (exit 9; the page stays queued for a rerun with a fresh profile);
 * otherwise the page is failed at once (a retry would be sent to the login page again).
 */
const loggedOut = step("logged out", async (attempt) => {
  const { page, context } = attempt;
  const out = loaded(attempt).loggedOut;
  if (!out) return GO_ON;
  const reason = `logged out: redirected to the login page ${out.loginPage}`;
  if (context.options.lifecycle.failOnContentCheck) {
    context.watch.contentCheckFailed(page.url, reason);
    return { kind: "handedBack" };
  }
  logger.warn("page", "page not archived: it redirected to the login page (the profile's session has expired?)", { url: page.url, loginPage: out.loginPage });
  return { kind: "failed", reason, error: reason, maxRetries: 0, logged: true };
});

const rateLimited = step("rate limit", async (attempt) => {
  const result = loaded(attempt);
  if (!result.rateLimited || attempt.context.stop.immediate) return GO_ON;
  return { kind: "deferred", until: { rateLimit: result.rateLimited, error: result.error } };
});

/** --failOnInvalidStatus: a 4xx/5xx document is a failed attempt. */
const status = step("status", async (attempt) => {
  // After a failure the tab is in an unknown state (hung, crashed, showing an error page): the next
  // attempt, of this page or another, gets a fresh one.
  const result = loaded(attempt);
  if (!result.document) await attempt.worker.reset();
  const invalid = result.document ? attempt.context.watch.invalidStatus(result.document.status) : null;
  if (invalid) attempt.result = { ...result, document: null, error: invalid };
  return GO_ON;
});

/** An immediate stop: whatever the page got, it is not settled as an attempt. */
const stopped = step("stop", async (attempt) => (attempt.context.stop.immediate ? { kind: "handedBack" } : GO_ON));

const loadFailed = step("load failed", async (attempt) => {
  const result = loaded(attempt);
  if (result.document) return GO_ON;
  return { kind: "failed", reason: result.error ?? "not loaded", error: result.error, maxRetries: attempt.context.options.maxPageRetries, logged: false };
});

/** --dedupePagesMinDepth: the document was archived already, written as a revisit; the page is skipped. */
const duplicate = step("duplicate", async (attempt) => {
  if (!loaded(attempt).duplicate) return GO_ON;
  const { page } = attempt;
  const message = "page skipped (duplicate): its HTML is archived already, stored as a revisit, not loaded further";
  return { kind: "skipped", reason: "duplicate", message, details: { url: page.url, depth: page.depth } };
});

const seedRedirect = step("seed redirect", async (attempt) => {
  const { page, context } = attempt;
  const landedAt = loaded(attempt).document?.url;
  if (page.depth !== 0 || landedAt === undefined || landedAt === withoutHash(page.url)) return GO_ON;
  attempt.landedAt = landedAt;
  attempt.seed = await followSeedRedirect(page.url, landedAt, seedOf(attempt), { state: context.state, scopes: context.scopes, addRedirectedSeeds: context.options.addRedirectedSeeds });
  return GO_ON;
});

/**
 * The page goes into the pages list of the WACZ holding its document (a rollover may have opened the next
 * one since), with its text and screenshot records (--dryRun: no archive data, the lists still written).
 * A seed that redirected is listed under both URLs: the one asked for, and the one replay shows.
 */
const list = step("list", async (attempt) => {
  const { page, context, tally } = attempt;
  const { options } = context;
  const result = loaded(attempt);
  const document = documentOf(result);
  const entry = {
    id: randomUUID(),
    url: page.url,
    ts: document.date.toISOString(),
    title: result.title,
    loadState: loadStateOf(result, options.behaviors.length > 0),
    status: document.status,
    mime: document.mime,
    depth: page.depth,
    seed: page.depth === 0,
    ...(result.favicon ? { favIconUrl: result.favicon } : {}),
    ...(options.text.includes("to-pages") && typeof result.extracts?.text === "string" ? { text: result.extracts.text } : {}),
  };
  attempt.listedIn = result.documentWacz ?? context.plan.currentWaczFilename();
  try {
    if (!options.lifecycle.dryRun) {
      const written = await context.pageResources.record(page.url, document.date, pageResources(page.url, result, options));
      tally.add(written.reduce((sum, record) => sum + record.length, 0));
    }
    await context.pageList.add(entry, attempt.listedIn);
    if (attempt.landedAt !== null) await context.pageList.add({ ...entry, id: randomUUID(), url: attempt.landedAt, text: undefined }, attempt.listedIn);
  } catch (err) {
    if (!isStorageError(err)) throw err;
    context.stop.fatal(`cannot write the page list or the page's text and screenshots: ${storageErrorMessage(err)}`, err);
    return { kind: "handedBack" };
  }
  return GO_ON;
});

/** The page's outlinks into the capture history, its change reported (--refresh), its in-scope links queued. */
const links = step("links", async (attempt) => {
  const { page, context } = attempt;
  const result = loaded(attempt);
  const document = documentOf(result);
  const seed = seedOf(attempt);
  const previous = attempt.previous;
  // A 304 page shows nothing to read links from: its archived outlinks stand for it.
  const notModified = document.status === 304 && previous !== null;
  const found = notModified ? previous.outlinks ?? [] : pageLinks(result.links, seed.scope);
  if (found.length || notModified) await context.notes.write(outlinksNote(page.url, found));
  if (context.options.refresh) await reportChange(page.url, document.status, previous, context.history, context.report);
  const from = { ...page, seedId: seed.seedId };
  attempt.queued = (await enqueueLinks(found, from, context, seed.scope)) + (await enqueueBehaviorLinks(result.behaviorLinks ?? [], from, context, seed.scope));
  return GO_ON;
});

/** A page's life in order; a page that passes every step is crawled. */
export const PAGE_STEPS: readonly PageStep[] = [
  pageLimit, budget, seed, fresh, hostTurn, load, contentCheck, loggedOut, rateLimited, status, stopped, loadFailed, duplicate, seedRedirect, list, links,
];

/**
 * How far the listed page got: a document the browser does not render is only loaded; a rendered one was read, and its
 * behaviors may have finished. A page captured without a browser (--captureMode hybrid) stands where its template's
 * browsed pages stood: the guard lets it through only when their behaviors ran and found nothing.
 */
export function loadStateOf(result: PageLoadResult, behaviorsEnabled = false): LoadState {
  if (!result.document || !isRenderedDocumentType(result.document.mime)) return LoadState.FULL_PAGE_LOADED;
  if (result.capture === "static") return behaviorsEnabled ? LoadState.BEHAVIORS_DONE : LoadState.EXTRACTION_DONE;
  return result.behaviors?.outcome === "finished" ? LoadState.BEHAVIORS_DONE : LoadState.EXTRACTION_DONE;
}

function documentOf(result: PageLoadResult): NonNullable<PageLoadResult["document"]> {
  if (!result.document) throw new Error("page step on a page without a document");
  return result.document;
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

/** What each loaded page is asked for besides its traffic (--text, --screenshot). */
export function extractOptionsOf(options: CrawlOptions): ExtractOptions {
  return { text: options.text.length > 0, screenshots: options.screenshot };
}

export function hardPageDeadlineMs(options: CrawlOptions): number {
  // Load, quiet network, post-load delay, behaviors, quiet network again, the drain's wait for what its bodies
  // made the page ask for, text and screenshots, the large downloads still arriving when the page was done; plus slack.
  const behaviors = options.behaviors.length ? options.behaviorTimeout + options.netIdleWait : 0;
  return (options.pageLoadTimeout + 2 * options.netIdleWait + options.postLoadDelay + behaviors) * 1000 + DOWNLOAD_GRACE_MS + 30_000 + extractBudgetMs(extractOptionsOf(options));
}
