import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { startSeedSite, type RobotsVariant, type SeedSite } from "../../helpers/seedSite.js";
import { startTestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { listedPaths } from "../../helpers/pageLists.js";

let cwd: string;
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-seeds-"));
});
afterAll(() => {
  rmSync(cwd, { recursive: true, force: true });
});

interface SeedCrawl {
  result: CliResult;
  stats: { crawled: number; failed: number; skippedRobots: number; status: string };
  /** Paths of the pages listed in pages.jsonl / extraPages.jsonl. */
  pages: string[];
  /** The "sitemaps read" log line's details. */
  sitemapLog: Record<string, unknown> | undefined;
  /** Target URIs of the WARC records. */
  warcTargets: string[];
}

async function crawlSite(site: SeedSite, collection: string, flags: string[], expectedCode = 0): Promise<SeedCrawl> {
  const statsFile = join(cwd, `${collection}-stats.json`);
  const result = await runCli("crawl", [
    "--url", site.seed, "--collection", collection, "--cwd", cwd, "--workers", "2", "--statsFilename", statsFile, "--netIdleWait", "2", ...flags,
  ], { timeoutMs: 240_000 });
  expect(result.code, result.stderr.slice(-3000)).toBe(expectedCode);
  if (expectedCode !== 0) expect(result.stderr.trim().split("\n").pop()).toBe("crawl: no page could be crawled: robots.txt disallows every seed (--robots)");
  const dir = join(cwd, "collections", collection);
  const pages = listedPaths(dir);
  const archive = join(dir, "archive");
  const warcTargets = existsSync(archive)
    ? readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f))).map((r) => r.headers.get("warc-target-uri") ?? "").filter(Boolean)
    : [];
  const sitemapLog = logLines(result.stderr).find((l) => l.context === "sitemap" && l.message === "sitemaps read")?.details;
  return { result, stats: JSON.parse(readFileSync(statsFile, "utf8")), pages, sitemapLog, warcTargets };
}

async function withSite<T>(robots: RobotsVariant, run: (site: SeedSite) => Promise<T>): Promise<T> {
  const site = await startSeedSite(robots);
  try {
    return await run(site);
  } finally {
    await site.close();
  }
}

const LINKED = ["/site/", "/site/linked.html", "/site/private/linked.html"];

// Each test crawls a site of its own into a collection of its own, so they run two at a time (their crawls
// mostly wait on --netIdleWait).
describe.concurrent("--useSitemap", () => {
  it("reads the sitemap index named in robots.txt, its gzipped children, and crawls the in-scope pages only the sitemaps list", async () => {
    await withSite("rules", async (site) => {
      const crawl = await crawlSite(site, "sitemap-all", ["--useSitemap"]);
      expect(crawl.pages).toEqual([
        ...LINKED,
        "/site/from-sitemap/a.html", "/site/from-sitemap/b.html", "/site/from-sitemap/c.html",
        "/site/from-sitemap/old.html", "/site/from-sitemap/undated.html", "/site/private/listed.html",
      ].sort());
      expect(crawl.sitemapLog).toMatchObject({ found: 9, queued: 6, alreadyQueued: 1, outOfScope: 2, filteredByDate: 0, skippedRobots: 0, sitemaps: 4, failedSitemaps: 0 });
      // Out of scope: never requested (the other host does not exist at all).
      expect(site.hits("/elsewhere/listed.html")).toBe(0);
      // Read once; sitemap fetches are the crawler's own, not archived.
      for (const path of ["/robots.txt", "/sitemap-index.xml", "/sitemaps/pages.xml", "/sitemaps/more.xml.gz", "/sitemaps/old.xml"]) expect(site.hits(path), path).toBe(1);
      expect(site.hits("/sitemap.xml")).toBe(0);
      expect(crawl.warcTargets.filter((u) => /\/robots\.txt$|\/sitemap[^/]*\.xml$|\/sitemaps\//.test(u))).toEqual([]);
      expect(crawl.stats).toMatchObject({ crawled: 9, failed: 0, skippedRobots: 0, status: "done" });

      // The same crawl run again: the sitemaps were read, so they are not read again.
      const again = await crawlSite(site, "sitemap-all", ["--useSitemap"]);
      expect(logLines(again.result.stderr).some((l) => l.context === "sitemap" && l.message === "sitemaps already read in this crawl")).toBe(true);
      expect(site.hits("/sitemap-index.xml")).toBe(1);
      expect(site.hits("/sitemaps/pages.xml")).toBe(1);
    });
  }, 300_000);

  it("--sitemapFromDate/--sitemapToDate keep exactly the pages dated in the period (and the undated ones); an index child dated before it is not read", async () => {
    await withSite("rules", async (site) => {
      const crawl = await crawlSite(site, "sitemap-dates", ["--useSitemap", "--sitemapFromDate", "2024-02-01", "--sitemapToDate", "2024-03-05"]);
      expect(crawl.pages).toEqual([...LINKED, "/site/from-sitemap/b.html", "/site/from-sitemap/undated.html", "/site/private/listed.html"].sort());
      expect(crawl.sitemapLog).toMatchObject({ found: 8, queued: 3, alreadyQueued: 1, outOfScope: 2, filteredByDate: 2, sitemaps: 3, sitemapsNotRead: 1 });
      expect(site.hits("/sitemaps/old.xml")).toBe(0);
      for (const path of ["/site/from-sitemap/a.html", "/site/from-sitemap/c.html", "/site/from-sitemap/old.html"]) expect(site.hits(path), path).toBe(0);
    });
  }, 300_000);

  it("in a crawl shared by two processes, the sitemaps are read once, by one of them", async () => {
    const redis = await startTestRedis();
    try {
      await withSite("rules", async (site) => {
        const run = () => runCli("crawl", [
          "--url", site.seed, "--collection", "sitemap-shared", "--crawlId", "sitemap-shared", "--cwd", cwd, "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url,
          "--netIdleWait", "1", "--useSitemap",
        ], { timeoutMs: 240_000 });
        const results = await Promise.all([run(), run()]);
        for (const r of results) expect(r.code, r.stderr.slice(-3000)).toBe(0);
        const logs = results.flatMap((r) => logLines(r.stderr)).filter((l) => l.context === "sitemap");
        expect(logs.filter((l) => l.message === "sitemaps read").length).toBe(1);
        expect(logs.filter((l) => /another crawler process is reading the sitemaps|sitemaps already read/.test(l.message)).length).toBe(1);
        for (const path of ["/sitemap-index.xml", "/sitemaps/pages.xml", "/sitemaps/more.xml.gz", "/sitemaps/old.xml"]) expect(site.hits(path), path).toBe(1);
        const crawled = results.flatMap((r) => logLines(r.stderr)).filter((l) => l.message === "page crawled").map((l) => new URL(l.details.url as string).pathname);
        expect(crawled.sort()).toEqual([
          ...LINKED,
          "/site/from-sitemap/a.html", "/site/from-sitemap/b.html", "/site/from-sitemap/c.html",
          "/site/from-sitemap/old.html", "/site/from-sitemap/undated.html", "/site/private/listed.html",
        ].sort());
      });
    } finally {
      await redis.stop();
    }
  }, 300_000);

  it("a given sitemap URL (relative to the seed) is read instead of robots.txt's", async () => {
    await withSite("rules", async (site) => {
      const crawl = await crawlSite(site, "sitemap-given", ["--useSitemap", "/sitemaps/more.xml.gz"]);
      expect(crawl.pages).toEqual([...LINKED, "/site/from-sitemap/c.html", "/site/private/listed.html"].sort());
      expect(site.hits("/robots.txt")).toBe(0);
      expect(site.hits("/sitemap-index.xml")).toBe(0);
    });
  }, 300_000);
});

describe.concurrent("--robots", () => {
  it("pages robots.txt disallows for the crawler's agent (links and sitemap entries) are never requested and are counted as skipped", async () => {
    await withSite("rules", async (site) => {
      const crawl = await crawlSite(site, "robots-rules", ["--robots", "--useSitemap"]);
      expect(crawl.pages).toEqual([
        "/site/", "/site/linked.html",
        "/site/from-sitemap/a.html", "/site/from-sitemap/b.html", "/site/from-sitemap/c.html", "/site/from-sitemap/old.html", "/site/from-sitemap/undated.html",
      ].sort());
      expect(site.requests.filter((p) => p.startsWith("/site/private/"))).toEqual([]);
      expect(crawl.stats).toMatchObject({ crawled: 7, skippedRobots: 2, status: "done" });
      expect(crawl.sitemapLog).toMatchObject({ queued: 5, skippedRobots: 1 });
      const skipped = logLines(crawl.result.stderr).filter((l) => l.context === "robots" && l.message.startsWith("page not crawled")).map((l) => new URL(l.details.url as string).pathname);
      expect(skipped.sort()).toEqual(["/site/private/linked.html", "/site/private/listed.html"]);
      // Fetched once per host, shared by the sitemap lookup and the page checks.
      expect(site.hits("/robots.txt")).toBe(1);
    });
  }, 300_000);

  it("a robots.txt that answers 404 allows everything (and the sitemap falls back to /sitemap.xml)", async () => {
    await withSite(404, async (site) => {
      const crawl = await crawlSite(site, "robots-404", ["--robots", "--useSitemap"]);
      expect(crawl.pages).toEqual([...LINKED, "/site/from-sitemap/fallback.html"].sort());
      expect(crawl.stats).toMatchObject({ crawled: 4, skippedRobots: 0 });
      expect(site.hits("/sitemap.xml")).toBe(1);
    });
  }, 300_000);

  it("a robots.txt that answers 503 disallows the whole host: not even the seed is fetched, and the crawl fails saying why", async () => {
    await withSite(503, async (site) => {
      const crawl = await crawlSite(site, "robots-503", ["--robots"], 9);
      expect(crawl.pages).toEqual([]);
      expect(site.requests).toEqual(["/robots.txt"]);
      expect(crawl.stats).toMatchObject({ crawled: 0, failed: 0, skippedRobots: 1 });
    });
  }, 300_000);

  it("without --robots, robots.txt is not fetched at all", async () => {
    await withSite("rules", async (site) => {
      const crawl = await crawlSite(site, "robots-off", ["--depth", "1"]);
      expect(crawl.pages).toEqual(LINKED);
      expect(site.hits("/robots.txt")).toBe(0);
    });
  }, 300_000);
});
