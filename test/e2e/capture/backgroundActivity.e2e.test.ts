import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { FEED_BATCHES, startDynamicSite, type DynamicSite } from "../../../fixtures/dynamicSite.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// The autoscroll on pages that keep busy by themselves, crawled on the default behaviors: polls, beacons
// and clocks do not hold it up, and feeds loading beside them are still scrolled to their end.
let site: DynamicSite;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];

/** Tall pages that poll (every 200 ms), open a request every 100 ms, re-fetch an image every 100 ms. */
const BUSY = ["/poll/1?tall", "/rapid?tall", "/reimage?tall"];
/** Tall pages that grow by themselves: a ticker adding a fetched line every 300 ms, a clock every 100 ms. */
const GROWING = ["/ticker?tall", "/clock"];
/** Feeds on a page polling every 200 ms: loaded by an IntersectionObserver, or by a clock checking the scroll position. */
const FEEDS = ["/feed/observed", "/feed/checked"];
const PAGES = [...BUSY, ...GROWING, ...FEEDS];

interface AutoscrollLine {
  url: string;
  end: string;
  rounds: number;
  seconds: number;
}
const autoscrollOf = (path: string): AutoscrollLine => {
  const lines = crawl.stderr.split("\n").filter((l) => l.includes('"autoscroll ended"')).map((l) => JSON.parse(l).details as AutoscrollLine);
  const found = lines.filter((l) => l.url === site.url + path);
  expect(found, path).toHaveLength(1);
  return found[0];
};

beforeAll(async () => {
  site = await startDynamicSite();
  cwd = mkdtempSync(join(tmpdir(), "crawl-background-"));
  crawl = await runCli("crawl", [
    ...PAGES.flatMap((p) => ["--url", site.url + p]), "--scopeType", "page", "--workers", "2", "--collection", "busy", "--cwd", cwd,
  ], { timeoutMs: 200_000 });
  const archive = join(cwd, "collections", "busy", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 240_000);

afterAll(async () => {
  await site?.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe("the autoscroll on pages busy by themselves", () => {
  it("crawls every page on its first attempt", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    // The page list names pages by their path (queries aside).
    expect(listedPaths(join(cwd, "collections", "busy"))).toEqual(PAGES.map((p) => p.split("?")[0]).sort());
    for (const page of PAGES) expect(site.requests.filter((r) => r.path === page).length, page).toBe(1);
  });

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
    for (let batch = 1; batch <= FEED_BATCHES; batch++) expect(archived.has(`${site.url}/feed-data?page=${batch}`), `batch ${batch}`).toBe(true);
    // Both feeds asked for every batch (and past the last, for one that is empty).
    for (let batch = 1; batch <= FEED_BATCHES + 1; batch++) {
      expect(site.requests.filter((r) => r.path === `/feed-data?page=${batch}`).length, `batch ${batch}`).toBeGreaterThanOrEqual(2);
    }
  });
});
