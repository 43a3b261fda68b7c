// A page's life as one chain (src/crawl/pages/): the steps run in order, the first settlement ends the
// chain, and settlePage settles the page's lease once, in the crawl state of a real redis-server. The browser
// side is a scripted worker: each test says what loading the page gave.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { emptyTally } from "../../../src/behaviors/behaviors.js";
import { resolveCrawlOptions, type CrawlOptions } from "../../../src/config/crawlOptions.js";
import { CrawlWatch } from "../../../src/crawl/crawlWatch.js";
import { crawlPage } from "../../../src/crawl/pages/crawlPage.js";
import { GO_ON, runChain, type PageAttempt, type PageContext, type PageStep } from "../../../src/crawl/pages/pageChain.js";
import { PAGE_STEPS } from "../../../src/crawl/pages/pageSteps.js";
import { StopControl } from "../../../src/crawl/stopControl.js";
import type { PageLoadResult, PageWorker } from "../../../src/page/pageWorker.js";
import { ByteTallySink } from "../../../src/budgets/byteTally.js";
import { DiscardingSink } from "../../../src/pipeline/dryRunSink.js";
import { PageList } from "../../../src/reports/pageList.js";
import { AddressPolicy } from "../../../src/fetch/addressPolicy.js";
import { PageAdmission } from "../../../src/scope/admission.js";
import { SeedScope } from "../../../src/scope/seedScope.js";
import { SeedScopes } from "../../../src/scope/seedScopes.js";
import { Frontier, type QueuedPage } from "../../../src/frontier/frontier.js";
import { ExtraSeeds } from "../../../src/frontier/extraSeeds.js";
import { HostPacing } from "../../../src/politeness/hostPacing.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { SeedBudgets } from "../../../src/budgets/seedBudgets.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

const SEED = "http://a.test/";
const WACZ = "pages-test.wacz";

let redis: TestRedis;
let dir: string;
let crawlNumber = 0;

beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "page-chain-"));
  return () => rmSync(dir, { recursive: true, force: true });
});

/** What the scripted worker was asked to do. */
interface WorkerLog {
  loads: string[];
  resets: number;
  /** Pages whose attempts' stores were let go (settled for good). */
  forgotten: string[];
  /** Whether each load was told it is a retry. */
  retries: boolean[];
}

/** The browser side of a page: `load` answers what the test says, reset and the tab are counted. */
function scriptedWorker(answer: (url: string) => PageLoadResult): { worker: PageWorker; log: WorkerLog } {
  const log: WorkerLog = { loads: [], resets: 0, forgotten: [], retries: [] };
  const worker = {
    id: 0,
    readyTab: async () => undefined,
    load: async (url: string, options: { retry?: boolean } = {}) => {
      log.loads.push(url);
      log.retries.push(options.retry ?? false);
      return answer(url);
    },
    reset: async () => {
      log.resets += 1;
    },
    forgetAttempts: (url: string) => {
      log.forgotten.push(url);
    },
  };
  return { worker: worker as unknown as PageWorker, log };
}

function loadedAs(url: string, extra: Partial<PageLoadResult> = {}): PageLoadResult {
  const document = { url, status: 200, mime: "text/html", resourceType: "Document", location: null, date: new Date("2026-01-02T03:04:05Z") };
  return { document, title: "a page", links: [], error: null, truncated: [], documentWacz: WACZ, ...extra };
}

/** A part of the page's context the pages of these tests never reach (refresh, links, archive records). */
function unreached<T extends object>(name: string): T {
  return new Proxy({} as T, { get: (_, key) => { throw new Error(`the page reached ${name}.${String(key)}`); } });
}

/** A fresh crawl (its own crawl id) with the seed queued and leased to this process. */
async function crawlWithLeasedSeed(flags: Record<string, string> = {}, tweak: (o: CrawlOptions) => CrawlOptions = (o) => o) {
  const base = resolveCrawlOptions({ url: [SEED], ...flags });
  const options = tweak({ ...base, lifecycle: { ...base.lifecycle, dryRun: true } });
  const crawlId = `chain${++crawlNumber}`;
  const membership = new Membership(redis.client, crawlId, "p1");
  const state = new Frontier(redis.client, membership);
  const budgets = new SeedBudgets(redis.client, membership.keys, membership.processId, options.budgets.seeds, options.budgets.maxPagesPerHost);
  const stop = new StopControl();
  const skipped: string[] = [];
  const context: PageContext = {
    options, state, stop, budgets,
    history: unreached("history"), notes: unreached("notes"), report: unreached("report"), plan: unreached("plan"), pageResources: unreached("pageResources"),
    scopes: new SeedScopes([new SeedScope(SEED, options.seedScopes[0]!)], new ExtraSeeds(redis.client, membership.keys)),
    pageList: new PageList(join(dir, "pages"), WACZ, false, null, { durable: false }),
    truncated: { count: 0, report: join(dir, "truncated.jsonl") },
    behaviors: emptyTally(),
    admission: new PageAdmission(state, AddressPolicy.outsideACrawl(), 0, null, (page, reason) => skipped.push(`${page.url} ${reason}`), budgets),
    hostPacing: new HostPacing(redis.client, membership.keys),
    robots: null,
    hybrid: null,
    watch: new CrawlWatch({ lifecycle: options.lifecycle, rateLimit: options.rateLimit, redis: redis.client, crawlId, stop, health: null, proxied: false }),
  };
  expect(await state.enqueue({ url: SEED, depth: 0, seedId: 0, extraHops: 0 }, 0)).toBe("queued");
  const page = await state.take();
  expect(page?.url).toBe(SEED);
  return { context, page: page as QueuedPage, state, stop, skipped, tally: new ByteTallySink(new DiscardingSink()) };
}

/** The pages lists' entries (url only), seeds then the others. */
function listed(): string[] {
  const read = (file: string) => {
    try {
      return readFileSync(join(dir, "pages", file), "utf8").trim().split("\n").slice(1).map((l) => (JSON.parse(l) as { url: string }).url);
    } catch {
      return [];
    }
  };
  return [...read("pages.jsonl"), ...read("extraPages.jsonl")];
}

describe("the chain", () => {
  it("a page's steps, in the order of its life", () => {
    expect(PAGE_STEPS.map((s) => s.name)).toEqual([
      "page limit", "budget", "seed", "fresh", "host turn", "load", "content check", "logged out", "rate limit", "status", "stop", "load failed", "duplicate", "seed redirect", "list", "links",
    ]);
  });

  it("runs the steps in order until one settles the attempt; the steps after it do not run; past them all the page is crawled", async () => {
    const ran: string[] = [];
    const goOn = (name: string): PageStep => ({ name, run: async () => (ran.push(name), GO_ON) });
    const attempt = { page: { url: SEED }, listedIn: WACZ } as unknown as PageAttempt;
    const settling: PageStep = { name: "settles", run: async () => (ran.push("settles"), { kind: "handedBack" }) };

    expect(await runChain([goOn("one"), goOn("two"), settling, goOn("three")], attempt)).toEqual({ settlement: { kind: "handedBack" }, step: "settles" });
    expect(ran).toEqual(["one", "two", "settles"]);

    ran.length = 0;
    expect(await runChain([goOn("one"), goOn("two")], attempt)).toEqual({ settlement: { kind: "crawled", listedIn: WACZ, fresh: null }, step: null });
    expect(ran).toEqual(["one", "two"]);
  });
});

describe("each settlement, settled once in the crawl state", () => {
  it("crawled: done once, listed once in the WACZ its document is in", async () => {
    const { context, page, state, tally } = await crawlWithLeasedSeed();
    const { worker, log } = scriptedWorker((url) => loadedAs(url));
    await crawlPage(worker, page, context, tally);
    expect(log).toEqual({ loads: [SEED], resets: 0, forgotten: [SEED], retries: [false] });
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 0, done: 1, failed: 0, failedAttempts: 0 });
    expect(await state.listedIn([SEED])).toEqual([WACZ]);
    expect(listed()).toEqual([SEED]);
  });

  it("crawled, a seed that redirected: listed under both URLs, the landed one kept where the seed is", async () => {
    const { context, page, state, tally } = await crawlWithLeasedSeed();
    const landed = "http://a.test/landed/";
    const { worker } = scriptedWorker(() => loadedAs(landed));
    await crawlPage(worker, page, context, tally);
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 0, done: 1 });
    expect(listed()).toEqual([SEED, landed]);
    expect(await state.listedIn([SEED, landed, "http://a.test/never/"])).toEqual([WACZ, WACZ, null]);
    // The landed URL is seen: a link to it is not queued again.
    expect(await state.enqueue({ url: landed, depth: 1, seedId: 0, extraHops: 0 }, 0)).toBe("seen");
  });

  it("failed: one failed attempt, given up with no retry left; the tab is reset once", async () => {
    const { context, page, state, tally } = await crawlWithLeasedSeed({ maxPageRetries: "0" });
    const { worker, log } = scriptedWorker(() => ({ document: null, title: "", links: [], error: "net::ERR_CONNECTION_REFUSED", truncated: [] }));
    await crawlPage(worker, page, context, tally);
    expect(log.resets).toBe(1);
    expect(log.forgotten).toEqual([SEED]);
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 0, done: 0, failed: 1, failedAttempts: 1 });
    expect((await state.failedPages()).map((f) => f.url)).toEqual([SEED]);
    expect(listed()).toEqual([]);
  });

  it("failed with a retry left: one failed attempt, the page queued again", async () => {
    const { context, page, state, tally } = await crawlWithLeasedSeed({ maxPageRetries: "1" });
    const { worker, log } = scriptedWorker(() => ({ document: null, title: "", links: [], error: "boom", truncated: [] }));
    await crawlPage(worker, page, context, tally);
    expect(await state.counts()).toMatchObject({ queued: 1, pending: 0, done: 0, failed: 0, failedAttempts: 1 });
    // What the attempt stored is kept for the retry, which is told it is one.
    expect(log.forgotten).toEqual([]);
    expect(log.retries).toEqual([false]);
    const due = (await state.nextRetryDueInMs()) ?? 0;
    await new Promise((resolve) => setTimeout(resolve, due + 50)); // the retry's backoff
    const retried = await state.take();
    expect(retried?.url).toBe(SEED);
    await crawlPage(worker, retried!, context, tally);
    expect(log.retries).toEqual([false, true]);
    expect(log.forgotten).toEqual([SEED]);
  });

  it("handed back: a failed content check fails the crawl, the page is queued again and no attempt is counted", async () => {
    const { context, page, state, stop, tally } = await crawlWithLeasedSeed();
    const { worker } = scriptedWorker((url) => loadedAs(url, { contentCheckFailed: "the page said so" }));
    await crawlPage(worker, page, context, tally);
    expect(stop.crawlFailure).toContain("content check failed");
    expect(await state.counts()).toMatchObject({ queued: 1, pending: 0, done: 0, failed: 0, failedAttempts: 0 });
    expect(listed()).toEqual([]);
  });

  it("deferred for its host's turn: not loaded, put back until the host's back-off is over", async () => {
    const { context, page, state, tally } = await crawlWithLeasedSeed();
    await context.hostPacing.backOff("a.test", 60_000);
    const { worker, log } = scriptedWorker((url) => loadedAs(url));
    await crawlPage(worker, page, context, tally);
    expect(log.loads).toEqual([]);
    expect(await state.counts()).toMatchObject({ queued: 1, pending: 0, done: 0, failed: 0, failedAttempts: 0 });
    expect(await state.nextRetryDueInMs()).toBeGreaterThan(50_000);
  });

  it("deferred by a rate limit: put back once, counted as rate limited, its host backed off", async () => {
    const { context, page, state, tally } = await crawlWithLeasedSeed();
    const { worker, log } = scriptedWorker((url) => ({ document: null, title: "", links: [], error: "rate limited", truncated: [], rateLimited: { url, status: 429, retryAfter: "30" } }));
    await crawlPage(worker, page, context, tally);
    expect(log.resets).toBe(1);
    expect(await state.counts()).toMatchObject({ queued: 1, pending: 0, done: 0, failed: 0, rateLimited: 1 });
    expect(await context.hostPacing.turn("a.test", 0)).toBeGreaterThan(20_000);
  });

  it("skipped as a duplicate: settled once as skipped, not listed", async () => {
    const { context, page, state, skipped, tally } = await crawlWithLeasedSeed();
    const { worker } = scriptedWorker((url) => loadedAs(url, { duplicate: true }));
    await crawlPage(worker, page, context, tally);
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 0, done: 0, failed: 0, failedAttempts: 0 });
    expect(await state.skippedCounts()).toEqual({ duplicate: 1, pageLimit: 0 });
    expect(skipped).toEqual([`${SEED} duplicate`]);
    expect(listed()).toEqual([]);
  });

  it("skipped at the page limit (--dedupePagesMinDepth): before its budget or its load", async () => {
    const { context, page, state, skipped, tally } = await crawlWithLeasedSeed({ limit: "1" }, (o) => ({ ...o, dedupeFlags: { ...o.dedupeFlags, pagesMinDepth: 0 } }));
    // One page crawled already: the limit is reached.
    await state.enqueue({ url: "http://a.test/done", depth: 1, seedId: 0, extraHops: 0 }, 0);
    const other = await state.take();
    expect(await state.markDone(other?.url ?? "")).toBe(true);
    const { worker, log } = scriptedWorker((url) => loadedAs(url));
    await crawlPage(worker, page, context, tally);
    expect(log.loads).toEqual([]);
    expect(await state.skippedCounts()).toEqual({ duplicate: 0, pageLimit: 1 });
    expect(skipped).toEqual([`${SEED} pageLimit`]);
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 0, done: 1 });
  });
});
