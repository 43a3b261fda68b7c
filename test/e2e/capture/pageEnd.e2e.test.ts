import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { BROWSER_FETCH_PAGES, openSearchDescription, PAGE_FILES, startBrowserFetchSite, type BrowserFetchSite } from "../../../fixtures/browserFetchSite.js";
import { DYNAMIC_PAGES, FEED_BATCHES, SAME_PNG, startDynamicSite, type DynamicSite } from "../../../fixtures/dynamicSite.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// Pages that never stop fetching, crawled on the defaults (behaviors on) but for --netIdleWait 3: a page that is
// never quiet ends when that wait runs out, whatever its length (the default 10 s only makes each page poll
// longer). One crawl of two copies of the site (each its own port, so each copy's request log and archived URLs
// are its own):
// - `linked`: the index and the pages it links to; each page's capture ends with the page;
// - `background`: tall busy and growing pages and feeds given as seeds; polls, beacons and clocks do not hold
//   the autoscroll up, and feeds loading beside them are still scrolled to their end;
// - `own`: quiet homepages whose heads make the browser fetch for itself (an OpenSearch description answered 404,
//   200 a second late, or never; a manifest, an icon, a prefetch): none of it holds the page's end.
let linked: DynamicSite;
let background: DynamicSite;
let own: BrowserFetchSite;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
let endedAt: number;
const PAGES = ["/", ...Object.keys(DYNAMIC_PAGES), "/longpoll"].sort();

/** Tall pages that poll (every 200 ms), open a request every 100 ms, re-fetch an image every 100 ms. */
const BUSY = ["/poll/1?tall", "/rapid?tall", "/reimage?tall"];
/** Tall pages that grow by themselves: a ticker adding a fetched line every 300 ms, a clock every 100 ms. */
const GROWING = ["/ticker?tall", "/clock"];
/** Feeds on a page polling every 200 ms: loaded by an IntersectionObserver, or by a clock checking the scroll position. */
const FEEDS = ["/feed/observed", "/feed/checked"];
const BACKGROUND_PAGES = [...BUSY, ...GROWING, ...FEEDS];

interface LogLine {
  timestamp: string;
  message: string;
  details?: Record<string, unknown>;
}
const logLines = () =>
  crawl.stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as LogLine);
/** Which copy of the site a URL is on, and its path: "linked /poll/1"; on a site of `own`, its page's name: "own opensearch-404 /". */
const sitePath = (url: URL) => {
  const ownPage = BROWSER_FETCH_PAGES.find((page) => own.pages[page].url === url.origin);
  return `${url.origin === linked.url ? "linked" : url.origin === background.url ? "background" : ownPage ? `own ${ownPage}` : url.origin} ${url.pathname}`;
};
const OWN_PAGES = BROWSER_FETCH_PAGES.map((page) => `own ${page} /`).sort();

interface AutoscrollLine {
  url: string;
  end: string;
  rounds: number;
  seconds: number;
}
const autoscrollOf = (path: string): AutoscrollLine => {
  const lines = crawl.stderr.split("\n").filter((l) => l.includes('"autoscroll ended"')).map((l) => JSON.parse(l).details as AutoscrollLine);
  const found = lines.filter((l) => l.url === background.url + path);
  expect(found, path).toHaveLength(1);
  return found[0];
};

beforeAll(async () => {
  [linked, background, own, redis] = await Promise.all([startDynamicSite(), startDynamicSite(), startBrowserFetchSite(), startTestRedis()]);
  cwd = mkdtempSync(join(tmpdir(), "crawl-page-end-"));
  crawl = await runCli("crawl", [
    "--url", `${linked.url}/`, ...BACKGROUND_PAGES.flatMap((p) => ["--url", background.url + p]),
    ...BROWSER_FETCH_PAGES.flatMap((page) => ["--url", `${own.pages[page].url}/`]),
    "--scopeType", "prefix", "--workers", "2", "--netIdleWait", "3", "--collection", "dyn", "--cwd", cwd,
    "--redisDedupeUrl", redis.url, "--logLevel", "debug", "--statsFilename", join(cwd, "stats.json"),
  ], { timeoutMs: 200_000 });
  endedAt = Date.now();
  const archive = join(cwd, "collections", "dyn", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 240_000);

afterAll(async () => {
  await linked?.close();
  await background?.close();
  await own?.close();
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("pages that never stop fetching", () => {
  it("are each crawled on the first attempt: every page listed, every page's document requested once", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    // The page list names pages by their path (queries aside).
    const listed = listedPaths(join(cwd, "collections", "dyn"), sitePath);
    expect(listed.filter((p) => p.startsWith("linked "))).toEqual(PAGES.map((p) => `linked ${p}`));
    expect(listed.filter((p) => p.startsWith("background "))).toEqual(BACKGROUND_PAGES.map((p) => `background ${p.split("?")[0]}`).sort());
    expect(listed.filter((p) => p.startsWith("own "))).toEqual(OWN_PAGES);
    for (const page of PAGES) expect(linked.requests.filter((r) => r.path === page).length, page).toBe(1);
    for (const page of BACKGROUND_PAGES) expect(background.requests.filter((r) => r.path === page).length, page).toBe(1);
    const stats = JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8"));
    expect(stats).toMatchObject({ crawled: PAGES.length + BACKGROUND_PAGES.length + OWN_PAGES.length, failed: 0, status: "done" });
    expect(crawl.stderr).not.toMatch(/did not finish within/);
  });

  it("fetch nothing after their page is done: no request from a page reaches the server after its 'page crawled'", () => {
    const crawledAt = new Map<string, number>();
    for (const line of logLines()) {
      if (line.message === "page crawled") crawledAt.set(sitePath(new URL(String(line.details?.url))), Date.parse(line.timestamp));
    }
    expect([...crawledAt.keys()].filter((p) => p.startsWith("linked ")).sort()).toEqual(PAGES.map((p) => `linked ${p}`));
    expect([...crawledAt.keys()].filter((p) => p.startsWith("background ")).sort()).toEqual(BACKGROUND_PAGES.map((p) => `background ${p.split("?")[0]}`).sort());
    for (const page of PAGES.filter((p) => p !== "/")) {
      const fromPage = linked.requests.filter((r) => r.referer === `${linked.url}${page}`);
      expect(fromPage.length, page).toBeGreaterThan(0);
      const late = fromPage.filter((r) => r.at > crawledAt.get(`linked ${page}`)!);
      // How late each came, for the failure's message: a few ms is the server's own process being slow to run.
      expect(late.map((r) => `${r.path} (+${r.at - crawledAt.get(`linked ${page}`)!} ms)`), page).toEqual([]);
    }
  });

  it("reach the server no more once the crawl has ended", async () => {
    const seen = linked.requests.length + background.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect([...linked.requests, ...background.requests].slice(seen).map((r) => r.path)).toEqual([]);
    expect([...linked.requests, ...background.requests].filter((r) => r.at > endedAt).map((r) => r.path)).toEqual([]);
  });

  it("report per page what their end cut off, in the page's timings", () => {
    const timings = logLines().filter((l) => l.message === "page timings");
    expect(timings.map((l) => sitePath(new URL(String(l.details?.url)))).sort()).toEqual([
      ...PAGES.map((p) => `linked ${p}`), ...BACKGROUND_PAGES.map((p) => `background ${p.split("?")[0]}`), ...OWN_PAGES,
    ].sort());
    for (const line of timings) expect(line.details?.cutAtEnd, String(line.details?.url)).toMatchObject({ refused: expect.any(Number), unfinished: 0 });
  });

  it("archive what they fetched while they ran: each page's polls, the image re-downloaded stored as itself", () => {
    const responses = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri")!.startsWith(linked.url + "/"));
    const archived = (prefix: string) => responses.filter((r) => new URL(r.headers.get("warc-target-uri")!).pathname === prefix || r.headers.get("warc-target-uri")!.startsWith(linked.url + prefix + "?"));
    for (const page of ["1", "2", "3"]) {
      const polls = archived("/poll-data").filter((r) => r.headers.get("warc-target-uri")!.includes(`page=${page}&`));
      expect(polls.length, `poll page ${page}`).toBeGreaterThan(0);
    }
    expect(archived("/tick").length).toBeGreaterThan(0);
    expect(archived("/rapid-data").length).toBeGreaterThan(0);
    // Each archived poll is one the server answered; none is stored twice.
    const served = new Set(linked.requests.map((r) => linked.url + r.path));
    const pollUris = responses.map((r) => r.headers.get("warc-target-uri")!).filter((u) => /poll-data|tick|rapid-data/.test(u));
    expect(pollUris.filter((u) => !served.has(u))).toEqual([]);
    expect(new Set(pollUris).size).toBe(pollUris.length);
    // Fetched by every page and again and again by /reimage (on each copy of the site): stored once per copy.
    for (const site of [linked, background]) {
      const png = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === `${site.url}/same.png`);
      expect(png.length, site.url).toBe(1);
      expect(Buffer.from(png[0].payload)).toEqual(SAME_PNG);
    }
  });
});

describe("the autoscroll on pages busy by themselves", () => {
  it("is not held up by a page's polls: it ends as on a quiet page that does not grow, well before the 10 s a step may wait", () => {
    for (const page of BUSY) {
      const scroll = autoscrollOf(page);
      expect(scroll.end, page).toBe("did not grow");
      expect(scroll.rounds, page).toBe(0);
      expect(scroll.seconds, page).toBeLessThan(5);
    }
  });

  it("leaves a page that grows by itself once it has seen it grow untouched, not at the behavior deadline", () => {
    for (const page of GROWING) {
      const scroll = autoscrollOf(page);
      expect(scroll.end, page).toBe("grows by itself");
      expect(scroll.seconds, page).toBeLessThan(10);
    }
  });

  it("still scrolls each feed beside a poll to its end: every batch requested, archived, and its growth counted", () => {
    const archived = new Set(records.filter((r) => r.headers.get("warc-type") === "response").map((r) => r.headers.get("warc-target-uri")));
    for (const page of FEEDS) {
      const scroll = autoscrollOf(page);
      expect(scroll.end, page).toBe("stopped growing");
      // The first batch comes with the load, each next one with a round, but for one the feed may load by
      // itself while the window still shows its end (growth no scroll caused is no round).
      expect(scroll.rounds, page).toBeGreaterThanOrEqual(FEED_BATCHES - 2);
      expect(scroll.rounds, page).toBeLessThanOrEqual(FEED_BATCHES - 1);
    }
    for (let batch = 1; batch <= FEED_BATCHES; batch++) expect(archived.has(`${background.url}/feed-data?page=${batch}`), `batch ${batch}`).toBe(true);
    // Both feeds asked for every batch (and past the last, for one that is empty).
    for (let batch = 1; batch <= FEED_BATCHES + 1; batch++) {
      expect(background.requests.filter((r) => r.path === `/feed-data?page=${batch}`).length, `batch ${batch}`).toBeGreaterThanOrEqual(2);
    }
  });
});

describe("pages whose heads make the browser fetch for itself", () => {
  const timingsOf = (page: (typeof BROWSER_FETCH_PAGES)[number]) => {
    const found = logLines().filter((l) => l.message === "page timings" && l.details?.url === `${own.pages[page].url}/`);
    expect(found, page).toHaveLength(1);
    return found[0].details as { ms: Record<string, number>; cutAtEnd: { refused: number; unfinished: number } };
  };

  it("are each crawled on the first attempt, the browser having fetched each one's OpenSearch description", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    for (const page of BROWSER_FETCH_PAGES) {
      const paths = own.pages[page].requests.map((r) => r.path);
      expect(paths.filter((p) => p === "/"), page).toHaveLength(1);
      // Asked for by the browser itself, in the background (not by the page): what the page's end must not wait for.
      expect(paths, page).toContain(PAGE_FILES.opensearch);
    }
  });

  it("end without waiting for what the browser fetches for itself: each one's drain is short", () => {
    // Measured: 1-2 ms each; waiting for the browser's own fetches it was 3 s (an OpenSearch description never
    // answered) to 11 s (answered, 404 or 200).
    const drains = BROWSER_FETCH_PAGES.map((page) => ({ page, drain: timingsOf(page).ms.drain }));
    expect(drains.filter(({ drain }) => drain >= 2000).map(({ page, drain }) => `${page}: ${drain} ms`)).toEqual([]);
    for (const page of BROWSER_FETCH_PAGES) expect(timingsOf(page).cutAtEnd.unfinished, page).toBe(0);
  });

  it("archive what the browser fetched for itself while the page lasted: exactly these URLs each", () => {
    const storedOf = (page: (typeof BROWSER_FETCH_PAGES)[number]) => records
      // The icon's bytes are in the archive already (the same PNG as dynamicSite's image): stored as a revisit.
      .filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!) && new URL(r.headers.get("warc-target-uri")!).origin === own.pages[page].url);
    const paths = (page: (typeof BROWSER_FETCH_PAGES)[number]) => storedOf(page).map((r) => `${new URL(r.headers.get("warc-target-uri")!).pathname} ${/^HTTP\/1\.[01] (\d+)/.exec(r.httpHead ?? "")?.[1]}`).sort();
    const always = ["/ 200", `${PAGE_FILES.icon} 200`, `${PAGE_FILES.manifest} 200`, `${PAGE_FILES.prefetch} 200`];
    expect(paths("opensearch-404")).toEqual([...always, `${PAGE_FILES.opensearch} 404`].sort());
    // Answered a second late, while the page still waited for its own data (answered later still): stored.
    expect(paths("opensearch-200")).toEqual([...always, `${PAGE_FILES.opensearch} 200`, `${PAGE_FILES.ownData} 200`].sort());
    // Never answered: nothing to store, and the page did not wait for it.
    expect(paths("opensearch-silent")).toEqual(always.sort());
    const description = storedOf("opensearch-200").find((r) => r.headers.get("warc-target-uri") === `${own.pages["opensearch-200"].url}${PAGE_FILES.opensearch}`);
    expect(Buffer.from(description!.payload).toString()).toBe(openSearchDescription(own.pages["opensearch-200"].url, "opensearch-200"));
  });
});
