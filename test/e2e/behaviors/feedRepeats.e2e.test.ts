import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FEED_BATCHES, REPEATING_FEEDS, startDynamicSite, type DynamicSite } from "../../../fixtures/dynamicSite.js";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

// Feeds that ran out but answer "more" with their first batch again, which the page adds again (it grows by the
// same items for as long as it is scrolled), beside a feed of FEED_BATCHES batches that ends with an empty one.
// On real pages such a feed took 78 requests of one URL, until the behaviors' deadline. Each page also polls
// every 200 ms. Default behaviors; a behavior deadline of 30 s, which a feed scrolled until its deadline reaches.
let site: DynamicSite;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
const SEEDS = [...Object.keys(REPEATING_FEEDS), "/feed/observed"];

interface AutoscrollLine {
  url: string;
  end: string;
  rounds: number;
}
const autoscrollOf = (path: string): AutoscrollLine[] =>
  crawl.stderr.split("\n").filter((l) => l.includes('"autoscroll ended"')).map((l) => JSON.parse(l).details as AutoscrollLine).filter((l) => l.url === site.url + path);
const requested = (prefix: string) => site.requests.map((r) => r.path).filter((p) => p === prefix || p.startsWith(`${prefix}?`));

beforeAll(async () => {
  [site, redis] = await Promise.all([startDynamicSite(), startTestRedis()]);
  cwd = mkdtempSync(join(tmpdir(), "crawl-feed-repeats-"));
  crawl = await runCli("crawl", [...SEEDS.flatMap((path) => ["--url", site.url + path]), "--scopeType", "page", "--collection", "feeds", "--cwd", cwd,
    "--redisDedupeUrl", redis.url, "--behaviorTimeout", "30", "--netIdleWait", "2", "--workers", "2"], { timeoutMs: 150_000 });
}, 160_000);

afterAll(async () => {
  await Promise.all([site?.close(), redis?.stop()]);
  rmSync(cwd, { recursive: true, force: true });
});

describe("a feed that answers 'more' with a batch it gave already", () => {
  it("crawls every page on its first attempt, behaviors finished", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    expect(listedPaths(join(cwd, "collections", "feeds"))).toEqual([...SEEDS].sort());
    expect(crawl.stderr).not.toMatch(/behaviors timed out/);
  });

  for (const [page, data] of Object.entries(REPEATING_FEEDS)) {
    it(`has ended: scrolled once more, the repeated batch seen, no further (${page})`, () => {
      expect(autoscrollOf(page)).toEqual([expect.objectContaining({ end: "repeats itself", rounds: 1 })]);
      // The batch of the load, and the one "more" that gave it again.
      expect(requested(data)).toEqual(data === "/feed-same" ? ["/feed-same", "/feed-same"] : ["/feed-again?page=1", "/feed-again?page=2"]);
    });
  }

  it("leaves a feed whose batches are new scrolled to its end: every batch asked for once, then the empty one", () => {
    expect(autoscrollOf("/feed/observed")).toEqual([expect.objectContaining({ end: "stopped growing", rounds: FEED_BATCHES - 1 })]);
    const batches = Array.from({ length: FEED_BATCHES }, (_, i) => `/feed-data?page=${i + 1}`);
    const asked = requested("/feed-data");
    expect(asked.slice(0, FEED_BATCHES)).toEqual(batches);
    // The empty answer past the end, asked for again by the last look (a nudge back and to the end).
    expect(new Set(asked.slice(FEED_BATCHES))).toEqual(new Set([`/feed-data?page=${FEED_BATCHES + 1}`]));
  });
});
