/**
 * In-page behaviors (browsertrix-behaviors): what a crawl captures with them and without them, on pages
 * whose content only loads on scroll, for other viewports, or on play (fixtures/behaviors/).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BEHAVIOR_PAGE_PATHS,
  BEHAVIOR_SEED_PATH,
  FEED_ITEMS_PER_PAGE,
  FEED_PAGES,
  LOADED_WITHOUT_BEHAVIORS,
  NEWS_AD_REFILL,
  NEWS_ADS_LOADED,
  NEWS_PAGE_PATHS,
  NEWS_SEED_PATH,
  ONLY_WITH_BEHAVIORS,
  feedItemText,
  startBehaviorSite,
  type BehaviorSite,
} from "../../../fixtures/behaviorSite.js";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { detectReplayFailure, replayPage, startReplayServer } from "../../helpers/replay.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

let site: BehaviorSite;
let cwd: string;

interface Crawl {
  result: CliResult;
  collectionDir: string;
  stats: { crawled: number; behaviors: { finished: number; timedOut: number; seconds: number } };
}
let withBehaviors: Crawl;
let withoutBehaviors: Crawl;

async function crawl(name: string, args: string[]): Promise<Crawl> {
  const statsFile = join(cwd, `${name}-stats.json`);
  const result = await runCli("crawl", ["--url", site.url + BEHAVIOR_SEED_PATH, "--collection", name, "--cwd", cwd, "--statsFilename", statsFile, "--netIdleWait", "3", ...args], { timeoutMs: 400_000 });
  const stats = result.code === 0 ? (JSON.parse(readFileSync(statsFile, "utf8")) as Crawl["stats"]) : { crawled: 0, behaviors: { finished: 0, timedOut: 0, seconds: 0 } };
  return { result, collectionDir: join(cwd, "collections", name), stats };
}

/** Paths (+ query) of the site's URLs with a response (or revisit: same bytes) record in the collection's WARC files. */
function capturedPaths(collectionDir: string): string[] {
  const archive = join(collectionDir, "archive");
  const paths = readdirSync(archive)
    .flatMap((f) => readWarcRecords(join(archive, f)))
    .filter((r) => r.headers.get("warc-type") === "response" || r.headers.get("warc-type") === "revisit")
    .map((r) => new URL(r.headers.get("warc-target-uri") ?? "").href.slice(site.url.length));
  return [...new Set(paths)].sort();
}

beforeAll(async () => {
  site = await startBehaviorSite();
  cwd = mkdtempSync(join(tmpdir(), "behaviors-e2e-"));
  [withBehaviors, withoutBehaviors] = await Promise.all([
    // Two workers: the two feeds are scrolled side by side, each tab must be visible for that.
    crawl("on", ["--generateWACZ", "--workers", "2"]),
    crawl("off", ["--behaviors", ""]),
  ]);
}, 500_000);

afterAll(async () => {
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("behaviors on (the default)", () => {
  it("captures every feed page, lazy image, srcset/picture candidate and media source", () => {
    expect(withBehaviors.result.code, withBehaviors.result.stderr.slice(-2000)).toBe(0);
    expect(capturedPaths(withBehaviors.collectionDir)).toEqual([...BEHAVIOR_PAGE_PATHS, ...LOADED_WITHOUT_BEHAVIORS, ...ONLY_WITH_BEHAVIORS].sort());
  });

  it("logs each page's behavior outcome and counts them in the stats", () => {
    const outcomes = logLines(withBehaviors.result.stderr).filter((l) => l.context === "behavior");
    expect(outcomes.map((l) => [l.message, l.details.url]).sort()).toEqual(
      BEHAVIOR_PAGE_PATHS.map((p) => ["behaviors finished", site.url + p]).sort(),
    );
    for (const line of outcomes) expect(line.details.seconds).toBeGreaterThan(0);
    const { behaviors } = withBehaviors.stats;
    expect(behaviors.finished).toBe(BEHAVIOR_PAGE_PATHS.length);
    expect(behaviors.timedOut).toBe(0);
    const logged = outcomes.reduce((sum, l) => sum + (l.details.seconds as number), 0);
    expect(behaviors.seconds).toBeCloseTo(logged, 0);
  });

  it("replays the deep feed items after scrolling the replayed page", async () => {
    const server = await startReplayServer(withBehaviors.collectionDir);
    try {
      const deepest = feedItemText(FEED_PAGES, FEED_ITEMS_PER_PAGE);
      const result = await replayPage(server, { source: "/archives/on.wacz", url: site.url + "/feed.html", waitForText: deepest, scroll: true, timeoutMs: 90_000 });
      expect(detectReplayFailure(result.text)).toBeNull();
      for (let page = 1; page <= FEED_PAGES; page++) expect(result.text).toContain(feedItemText(page, FEED_ITEMS_PER_PAGE));
      expect(result.text).toContain("End of feed");
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe("behaviors off (--behaviors \"\")", () => {
  it("captures only what loading the pages fetches (loading=\"lazy\" images included): no deeper feed page, data-src image, other candidate or media", () => {
    expect(withoutBehaviors.result.code, withoutBehaviors.result.stderr.slice(-2000)).toBe(0);
    expect(capturedPaths(withoutBehaviors.collectionDir)).toEqual([...BEHAVIOR_PAGE_PATHS, ...LOADED_WITHOUT_BEHAVIORS].sort());
    expect(logLines(withoutBehaviors.result.stderr).filter((l) => l.context === "behavior")).toEqual([]);
    expect(withoutBehaviors.stats.behaviors).toEqual({ finished: 0, timedOut: 0, seconds: 0 });
  });
});

describe("--behaviorTimeout", () => {
  it("cuts a long behavior short: logged and counted as timed out, and the page is still crawled", async () => {
    // The slow feed: scrolling it takes over 3 s on any machine (the plain feed can be done within 1 s).
    const timedOut = await runCli("crawl", [
      "--url", site.url + "/feed.html?feed=slow", "--collection", "timeout", "--cwd", cwd, "--behaviorTimeout", "1", "--netIdleWait", "2",
      "--statsFilename", join(cwd, "timeout-stats.json"),
    ], { timeoutMs: 200_000 });
    expect(timedOut.code, timedOut.stderr.slice(-2000)).toBe(0);
    const outcomes = logLines(timedOut.stderr).filter((l) => l.context === "behavior");
    expect(outcomes.map((l) => [l.message, l.details.url])).toEqual([["behaviors timed out", site.url + "/feed.html?feed=slow"]]);
    const stats = JSON.parse(readFileSync(join(cwd, "timeout-stats.json"), "utf8")) as Crawl["stats"];
    expect(stats.crawled).toBe(1);
    expect(stats.behaviors.finished).toBe(0);
    expect(stats.behaviors.timedOut).toBe(1);
    expect(capturedPaths(join(cwd, "collections", "timeout"))).toContain("/feed.html?feed=slow");
  }, 220_000);
});

describe("ad frames taken down while the behaviors run and the links are read", () => {
  let news: CliResult;
  const newsDir = () => join(cwd, "collections", "news");

  beforeAll(async () => {
    news = await runCli("crawl", ["--url", site.url + NEWS_SEED_PATH, "--collection", "news", "--cwd", cwd, "--netIdleWait", "3", "--logLevel", "debug", "--context", "page,behavior,links"], { timeoutMs: 200_000 });
  }, 220_000);

  it("crawls the front page on its first attempt, its behaviors finished, and the stories it links to", () => {
    expect(news.code, news.stderr.slice(-3000)).toBe(0);
    const lines = logLines(news.stderr);
    expect(lines.filter((l) => l.context === "page" && /failed/.test(l.message))).toEqual([]);
    const seedUrl = site.url + NEWS_SEED_PATH;
    expect(lines.filter((l) => l.message === "loading page").map((l) => l.details.url).sort()).toEqual(NEWS_PAGE_PATHS.map((p) => site.url + p).sort());
    expect(lines.filter((l) => l.message === "page crawled").map((l) => [l.details.url, l.details.linksQueued]).sort()).toEqual(
      NEWS_PAGE_PATHS.map((p) => [site.url + p, p === NEWS_SEED_PATH ? 2 : 0]).sort(),
    );
    expect(lines.filter((l) => l.context === "behavior" && l.logLevel === "info" && l.details.url === seedUrl).map((l) => l.message)).toEqual(["behaviors finished"]);
    expect(listedPaths(newsDir())).toEqual([...NEWS_PAGE_PATHS].sort());
  });

  it("skips the autofetch sweep in the frames taken down, with a debug line each", () => {
    const skipped = logLines(news.stderr).filter((l) => l.message === "autofetch sweep skipped in a frame");
    // The six ad frames the behaviors started in (three creatives, each with its frame), all gone at the first scroll.
    expect(skipped).toHaveLength(6);
    for (const line of skipped) {
      expect(line.logLevel).toBe("debug");
      expect(line.details.url).toBe(site.url + NEWS_SEED_PATH);
      expect(line.details.frameUrl).toMatch(/\/ads\/(creative|inner)\.html\?slot=\d$/);
    }
  });

  it("skips the links of the ad frames taken down while the front page's links are read, with a debug line each", () => {
    const skipped = logLines(news.stderr).filter((l) => l.message === "links skipped in a frame");
    // The ad frames up since the last swap, three slots' creatives and their frames, all taken down by the read.
    expect(skipped).toHaveLength(6);
    for (const line of skipped) {
      expect(line.logLevel).toBe("debug");
      expect(line.details.url).toBe(site.url + NEWS_SEED_PATH);
      expect(line.details.frameUrl).toMatch(/\/ads\/(creative|inner)\.html\?slot=r\d+$/);
    }
  });

  it("stores what the ad frames loaded before they were taken down", () => {
    const captured = capturedPaths(newsDir());
    const ads = captured.filter((p) => p.startsWith("/ads/"));
    expect(ads.filter((p) => !NEWS_AD_REFILL.test(p))).toEqual([...NEWS_ADS_LOADED].sort());
    expect(ads.filter((p) => !NEWS_ADS_LOADED.includes(p) && !NEWS_AD_REFILL.test(p))).toEqual([]);
    expect(captured.filter((p) => !p.startsWith("/ads/"))).toEqual([...NEWS_PAGE_PATHS].sort());
  });
});

describe("bad behavior flags", () => {
  it.each([
    [["--behaviors", "autoscroll,bogus"], /--behaviors: unknown behavior "bogus"; known: autoscroll, autoplay, autofetch, siteSpecific/],
    [["--behaviorTimeout", "0"], /--behaviorTimeout must be more than 0 seconds/],
    [["--behaviorTimeout", "soon"], /--behaviorTimeout must be a number of seconds/],
    [["--postLoadDelay", "-1"], /--postLoadDelay must be a number of seconds/],
  ])("%j is a usage error (exit 4) with a one-line message", async (args, message) => {
    const result = await runCli("crawl", ["--url", "http://127.0.0.1:9/", "--cwd", cwd, ...args]);
    expect(result.code).toBe(4);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });
});
