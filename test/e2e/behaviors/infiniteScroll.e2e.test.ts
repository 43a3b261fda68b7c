/**
 * The autoscroll behavior on feeds that load more as they are scrolled (test/helpers/infiniteScrollSite.ts):
 * window feeds of 5, 20 and 100 batches of 3,000 px (the last page 300,000 px tall), a feed inside a
 * scrolling <div>, a "load more" button, feeds whose next batch comes 300-400 ms after the scrolling (a
 * debounced trigger, a slow server), a feed whose batches bring images with 1x/2x candidates, and a feed that never ends (bounded by --behaviorTimeout, or by
 * --autoscrollMaxRounds). Each crawl's WARC records must hold exactly the feed's batch requests; the replay
 * of a feed shows its last batch once scrolled. And loading="lazy" images far below the fold are captured
 * with behaviors off (Chromium runs with --disable-lazy-loading).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import {
  DELAYED_FEEDS,
  DIV_FEED_BATCHES,
  LAZY_IMAGES,
  LOAD_MORE_BATCHES,
  SRCSET_FEED_BATCHES,
  WINDOW_FEEDS,
  batchRequests,
  batchText,
  srcsetCandidates,
  startInfiniteScrollSite,
  type InfiniteScrollSite,
  type WindowFeed,
} from "../../helpers/infiniteScrollSite.js";
import { detectReplayFailure, startReplayServer, type ReplayServer } from "../../helpers/replay.js";
import { openReplaySession, type ReplaySession } from "../../helpers/replaySession.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

let site: InfiniteScrollSite;
let cwd: string;

interface Crawl {
  result: CliResult;
  collectionDir: string;
  stats: { crawled: number; failed: number; behaviors: { finished: number; timedOut: number; seconds: number } };
}

async function crawl(name: string, paths: string[], args: string[]): Promise<Crawl> {
  const statsFile = join(cwd, `${name}-stats.json`);
  const seeds = paths.flatMap((p) => ["--url", site.url + p]);
  const result = await runCli("crawl", [...seeds, "--scopeType", "page", "--collection", name, "--cwd", cwd, "--statsFilename", statsFile, "--netIdleWait", "2", ...args], { timeoutMs: 500_000 });
  const stats = result.code === 0 ? (JSON.parse(readFileSync(statsFile, "utf8")) as Crawl["stats"]) : { crawled: 0, failed: 0, behaviors: { finished: 0, timedOut: 0, seconds: 0 } };
  return { result, collectionDir: join(cwd, "collections", name), stats };
}

/** Path + query of every URL of the site with a response or revisit record in the collection's WARC files. */
function captured(collectionDir: string): Set<string> {
  const archive = join(collectionDir, "archive");
  return new Set(
    readdirSync(archive)
      .flatMap((f) => readWarcRecords(join(archive, f)))
      .filter((r) => r.headers.get("warc-type") === "response" || r.headers.get("warc-type") === "revisit")
      .map((r) => r.headers.get("warc-target-uri") ?? "")
      .filter((uri) => uri.startsWith(site.url))
      .map((uri) => uri.slice(site.url.length)),
  );
}

/** The captured batch requests of one feed, in batch order. */
function capturedBatches(crawl: Crawl, feed: string): string[] {
  const batch = (target: string) => Number(new URL(target, "http://x").searchParams.get("batch"));
  return [...captured(crawl.collectionDir)].filter((t) => t.startsWith(`/api/${feed}?`)).sort((a, b) => batch(a) - batch(b));
}

function behaviorOutcomes(crawl: Crawl): [string, unknown][] {
  return logLines(crawl.result.stderr).filter((l) => l.context === "behavior").map((l) => [l.message, l.details.url]);
}

interface AutoscrollLine {
  url: string;
  rounds: number;
  end: string;
  seconds: number;
}
function autoscrollLines(crawl: Crawl): AutoscrollLine[] {
  return logLines(crawl.result.stderr).filter((l) => l.message === "autoscroll ended").map((l) => l.details as unknown as AutoscrollLine);
}

const FEED_PAGES = [...[...Object.keys(WINDOW_FEEDS), ...Object.keys(DELAYED_FEEDS), "srcset"].map((f) => `/feed/${f}.html`), "/div-feed.html", "/load-more.html"];

let feeds: Crawl;
let lazy: Crawl;
let endlessTimeout: Crawl;
let endlessRounds: Crawl;

beforeAll(async () => {
  site = await startInfiniteScrollSite();
  cwd = mkdtempSync(join(tmpdir(), "infinite-scroll-e2e-"));
  // Two crawls at a time: the long feeds crawl beside the three short ones, one after the other.
  [feeds] = await Promise.all([
    // Two workers: each tab has a window of its own, so both feeds render (and their observers fire).
    crawl("feeds", FEED_PAGES, ["--workers", "2", "--generateWACZ", "--behaviorTimeout", "300"]),
    (async () => {
      lazy = await crawl("lazy", ["/lazy.html"], ["--behaviors", ""]);
      endlessRounds = await crawl("endless-rounds", ["/feed/endless.html"], ["--behaviorTimeout", "300", "--autoscrollMaxRounds", "7"]);
      // 5 s of an endless feed: dozens of batches where the test needs four (each more page for Chromium to lay out).
      endlessTimeout = await crawl("endless-timeout", ["/feed/endless.html"], ["--behaviorTimeout", "5"]);
    })(),
  ]);
  // The figures for the closing note: each feed page's autoscroll rounds and seconds, and its behaviors' seconds.
  for (const c of [feeds, endlessTimeout, endlessRounds]) {
    const behaviorSeconds = new Map(logLines(c.result.stderr).filter((l) => l.context === "behavior").map((l) => [l.details.url, l.details.seconds]));
    for (const line of autoscrollLines(c)) {
      console.log(JSON.stringify({ page: line.url.slice(site.url.length), rounds: line.rounds, end: line.end, autoscrollSeconds: line.seconds, behaviorSeconds: behaviorSeconds.get(line.url) }));
    }
  }
}, 1_200_000);

afterAll(async () => {
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("feeds that end", () => {
  it("the crawl succeeds and each page's behaviors finish", () => {
    expect(feeds.result.code, feeds.result.stderr.slice(-3000)).toBe(0);
    expect(behaviorOutcomes(feeds).sort()).toEqual(FEED_PAGES.map((p) => ["behaviors finished", site.url + p]).sort());
    expect(feeds.stats.crawled).toBe(FEED_PAGES.length);
  });

  it.each(Object.entries(WINDOW_FEEDS))("window feed %s: every batch is captured", (feed, batches) => {
    expect(capturedBatches(feeds, feed)).toEqual(batchRequests(feed, batches));
    const line = autoscrollLines(feeds).find((l) => l.url === `${site.url}/feed/${feed}.html`);
    expect(line?.end).toBe("stopped growing");
  });

  // The autoscroll ends as soon as the page settles: the candidates autofetch queues for the last batch's
  // image (the one the browser did not pick) must still be fetched and stored before the page is done.
  it("feed with srcset images: both candidates of every batch's image are captured, the last batch's too", () => {
    expect(capturedBatches(feeds, "srcset")).toEqual(batchRequests("srcset", SRCSET_FEED_BATCHES));
    const images = [...captured(feeds.collectionDir)].filter((t) => t.startsWith("/img/srcset-")).sort();
    expect(images).toEqual(Array.from({ length: SRCSET_FEED_BATCHES }, (_, i) => srcsetCandidates(i + 1)).flat().sort());
  });

  // The autoscroll stops waiting as soon as a page has settled with no request (autoscrollTimers.ts):
  // a debounced trigger is a pending timer, a slow answer a request in flight.
  it.each(Object.entries(DELAYED_FEEDS))("feed %s, its next batch 300-400 ms after the scrolling: every batch is captured", (feed, batches) => {
    expect(capturedBatches(feeds, feed)).toEqual(batchRequests(feed, batches));
    const line = autoscrollLines(feeds).find((l) => l.url === `${site.url}/feed/${feed}.html`);
    expect([line?.rounds, line?.end]).toEqual([batches - 1, "stopped growing"]);
  });

  it("a feed inside a scrolling <div> (the window does not scroll): every batch is captured", () => {
    expect(capturedBatches(feeds, "div-feed")).toEqual(batchRequests("div-feed", DIV_FEED_BATCHES));
  });

  it("a load-more button: every batch is captured; links and form buttons that navigate are not clicked", () => {
    expect(capturedBatches(feeds, "load-more")).toEqual(batchRequests("load-more", LOAD_MORE_BATCHES));
    expect(site.requests.filter((r) => r.startsWith("/elsewhere") || r.startsWith("/submitted"))).toEqual([]);
  });

  describe("in ReplayWeb.page (both feeds in tabs of one browser)", () => {
    let server: ReplayServer;
    let session: ReplaySession;
    beforeAll(async () => {
      server = await startReplayServer(feeds.collectionDir);
      session = await openReplaySession(server);
    }, 60_000);
    afterAll(async () => {
      await session?.close();
      await server?.close();
    });

    it.each(["feed-5", "feed-20"] as WindowFeed[])("ReplayWeb.page shows the last batch of %s after scrolling the replay", async (feed) => {
      const last = batchText(feed, WINDOW_FEEDS[feed]);
      const result = await session.replay({ source: "/archives/feeds.wacz", url: `${site.url}/feed/${feed}.html`, waitForText: last, scroll: true, timeoutMs: 120_000 });
      expect(detectReplayFailure(result.text)).toBeNull();
      expect(result.text).toContain(last);
      expect(result.text).toContain(`End of ${feed}`);
    }, 150_000);
  });
});

describe("a feed that never ends", () => {
  it("is cut by --behaviorTimeout: logged as timed out, the page stored (not failed) with the batches loaded so far", () => {
    expect(endlessTimeout.result.code, endlessTimeout.result.stderr.slice(-3000)).toBe(0);
    expect(behaviorOutcomes(endlessTimeout)).toEqual([["behaviors timed out", site.url + "/feed/endless.html"]]);
    expect(endlessTimeout.stats.crawled).toBe(1);
    expect(endlessTimeout.stats.failed).toBe(0);
    expect(endlessTimeout.stats.behaviors.timedOut).toBe(1);
    expect(captured(endlessTimeout.collectionDir)).toContain("/feed/endless.html");
    // Batches 1..n with none missing, and well past the first few.
    const batches = capturedBatches(endlessTimeout, "endless");
    expect(batches.length).toBeGreaterThanOrEqual(4);
    expect(batches).toEqual(batchRequests("endless", batches.length));
    expect(autoscrollLines(endlessTimeout).map((l) => l.end)).toEqual(["deadline"]);
  });

  it("is cut by --autoscrollMaxRounds: 7 rounds after the first batch, batches 1-8, behaviors finished", () => {
    expect(endlessRounds.result.code, endlessRounds.result.stderr.slice(-3000)).toBe(0);
    expect(behaviorOutcomes(endlessRounds)).toEqual([["behaviors finished", site.url + "/feed/endless.html"]]);
    expect(capturedBatches(endlessRounds, "endless")).toEqual(batchRequests("endless", 8));
    expect(autoscrollLines(endlessRounds).map((l) => [l.rounds, l.end])).toEqual([[7, "round limit"]]);
  });
});

describe("lazy images without behaviors", () => {
  it('--behaviors "": loading="lazy" images 20,000 px and more below the fold are captured', () => {
    expect(lazy.result.code, lazy.result.stderr.slice(-3000)).toBe(0);
    expect([...captured(lazy.collectionDir)].sort()).toEqual(["/lazy.html", ...LAZY_IMAGES].sort());
  });
});

describe("bad --autoscrollMaxRounds", () => {
  it.each([["0"], ["many"]])("%s is a usage error (exit 4) with a one-line message", async (value) => {
    const result = await runCli("crawl", ["--url", "http://127.0.0.1:9/", "--cwd", cwd, "--autoscrollMaxRounds", value]);
    expect(result.code).toBe(4);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/--autoscrollMaxRounds must be/);
  });
});
