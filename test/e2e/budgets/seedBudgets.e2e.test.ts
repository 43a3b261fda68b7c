import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../../../bench/lib/generatedSite.js";
import { closedPort } from "../../helpers/closedPort.js";
import { crawlInterruptedAfterFirstPage, NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { startTestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

// Per-seed budgets (a config seed's limit / sizeLimit, --seedPageLimit), the per-host page cap
// (--maxPagesPerHost) and reports/seeds.jsonl, on generated loopback sites (page i links to pages 2i+1,
// 2i+2 and the home page /page/0.html). One worker: pages are taken in depth-major order, so which pages a
// budget lets through is exact.
const FAST = [...NO_BEHAVIORS, "--netIdleWait", "0", "--maxPageRetries", "0"];

let big: GeneratedSite[];
let small: GeneratedSite;
let cwd: string;
beforeAll(async () => {
  big = await Promise.all([0, 1, 2, 3].map(() => startGeneratedSite(15)));
  small = await startGeneratedSite(3);
  cwd = mkdtempSync(join(tmpdir(), "crawl-budgets-"));
});
afterAll(async () => {
  await Promise.all([...big, small].map((site) => site.close()));
  rmSync(cwd, { recursive: true, force: true });
});

const collectionDir = (name: string) => join(cwd, "collections", name);

/** The crawled pages of a collection (every pages list of every writer), as full URLs. */
function crawledPages(name: string): string[] {
  const dir = join(collectionDir(name), "pages");
  return readdirSync(dir).filter((f) => f.endsWith(".jsonl"))
    .flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").filter(Boolean))
    .map((l) => (JSON.parse(l) as { url?: string }).url)
    .filter((url): url is string => url !== undefined) // not the header lines
    .sort();
}

const pagesOf = (site: GeneratedSite, ns: number[]) => ns.map((n) => `${site.url}/page/${n}.html`);
const onSite = (site: GeneratedSite, urls: string[]) => urls.filter((u) => u.startsWith(site.url + "/")).sort();

/** WARC bytes (gzip members as written) of the records about each site's URLs, over all the WARC files. */
function warcBytesBySite(name: string, sites: GeneratedSite[]): number[] {
  const archive = join(collectionDir(name), "archive");
  const records = readdirSync(archive).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(archive, f)));
  return sites.map((site) => records.filter((r) => (r.headers.get("warc-target-uri") ?? "").startsWith(site.url + "/")).reduce((sum, r) => sum + r.length, 0));
}

interface SeedLine { seedId: number; url: string; pages: number; bytes: number; end: string; limit: number; sizeLimit: number }
const seedLines = (name: string): SeedLine[] =>
  readFileSync(join(collectionDir(name), "reports", "seeds.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as SeedLine);

function skippedByReason(name: string): Record<string, string[]> {
  const byReason: Record<string, string[]> = {};
  const lines = readFileSync(join(collectionDir(name), "reports", "skippedPages.jsonl"), "utf8").trim().split("\n").slice(1);
  for (const { url, reason } of lines.map((l) => JSON.parse(l) as { url: string; reason: string })) (byReason[reason] ??= []).push(url);
  for (const urls of Object.values(byReason)) urls.sort();
  return byReason;
}

// Every crawl writes a collection of its own, and the sites keep no count, so tests run two at a time where
// they can (marked concurrent); the --timeLimit crawl, whose limit is barely more than a browser's start, runs alone.
describe("per-seed budgets and the seeds report", () => {
  it.concurrent("each config seed keeps to its own limit / sizeLimit, --seedPageLimit to the others; seeds.jsonl says how each ended", async () => {
    const [a, b, c] = big;
    const unreachable = `http://127.0.0.1:${await closedPort()}/page/0.html`;
    const config = join(cwd, "budgets.yaml");
    writeFileSync(config, [
      "seeds:",
      `  - url: ${a.url}/page/0.html`,
      "    limit: 4",
      `  - ${b.url}/page/0.html`,
      `  - url: ${c.url}/page/0.html`,
      "    limit: 0",
      "    sizeLimit: 1",
      `  - url: ${small.url}/page/0.html`,
      "    limit: 100",
      `  - ${unreachable}`,
      "seedPageLimit: 2",
      "workers: 1",
      "generateWACZ: true",
      "",
    ].join("\n"));
    const result = await runCli("crawl", ["--config", config, "--cwd", cwd, "--collection", "budgets", "--reportSkipped", ...FAST]);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);

    const crawled = crawledPages("budgets");
    // a (limit 4): pages 0, 1, 2 queue 3-6; page 3 is the fourth, so its links 7 and 8 are not queued, and 4-6 are skipped when taken.
    expect(onSite(a, crawled)).toEqual(pagesOf(a, [0, 1, 2, 3]).sort());
    // b (--seedPageLimit 2): page 1 is the second, its links 3 and 4 are not queued, 2 is skipped when taken.
    expect(onSite(b, crawled)).toEqual(pagesOf(b, [0, 1]).sort());
    // c (sizeLimit 1 byte, its own limit 0 = none): its seed page spends the budget; 1 and 2, queued meanwhile, are skipped.
    expect(onSite(c, crawled)).toEqual(pagesOf(c, [0]));
    expect(onSite(small, crawled)).toEqual(pagesOf(small, [0, 1, 2]).sort());
    expect(crawled).toHaveLength(4 + 2 + 1 + 3);

    const bytes = warcBytesBySite("budgets", [a, b, c, small]);
    expect(bytes.every((n) => n > 0)).toBe(true);
    expect(seedLines("budgets")).toEqual([
      { seedId: 0, url: `${a.url}/page/0.html`, pages: 4, bytes: bytes[0], end: "pageLimit", limit: 4, sizeLimit: 0 },
      { seedId: 1, url: `${b.url}/page/0.html`, pages: 2, bytes: bytes[1], end: "pageLimit", limit: 2, sizeLimit: 0 },
      { seedId: 2, url: `${c.url}/page/0.html`, pages: 1, bytes: bytes[2], end: "sizeLimit", limit: 0, sizeLimit: 1 },
      { seedId: 3, url: `${small.url}/page/0.html`, pages: 3, bytes: bytes[3], end: "done", limit: 100, sizeLimit: 0 },
      { seedId: 4, url: unreachable, pages: 0, bytes: 0, end: "failed", limit: 2, sizeLimit: 0 },
    ]);

    // A crawl with budgets packages the report too.
    const wacz = await readZip(join(collectionDir("budgets"), "budgets.wacz"));
    expect(wacz.get("reports/seeds.jsonl")?.data.toString("utf8")).toBe(readFileSync(join(collectionDir("budgets"), "reports", "seeds.jsonl"), "utf8"));

    // Pages not crawled for their budget are listed with the reason (a link to a page crawled already may be too, as with --limit).
    const skipped = skippedByReason("budgets");
    const neverCrawled = (urls: string[] | undefined) => (urls ?? []).filter((u) => !crawled.includes(u));
    expect(neverCrawled(skipped.seedPageLimit)).toEqual([...pagesOf(a, [4, 5, 6, 7, 8]), ...pagesOf(b, [2, 3, 4])].sort());
    expect(neverCrawled(skipped.seedSizeLimit)).toEqual(pagesOf(c, [1, 2]).sort());
  }, 180_000);

  it.concurrent("--maxPagesPerHost caps the pages of each host, whatever their seed", async () => {
    const [d, e] = big;
    const result = await runCli("crawl", ["--url", `${d.url}/page/0.html`, "--url", `${e.url}/page/0.html`, "--maxPagesPerHost", "3", "--cwd", cwd, "--collection", "hosts", "--workers", "1", ...FAST]);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const crawled = crawledPages("hosts");
    expect(onSite(d, crawled)).toEqual(pagesOf(d, [0, 1, 2]).sort());
    expect(onSite(e, crawled)).toEqual(pagesOf(e, [0, 1, 2]).sort());
    expect(crawled).toHaveLength(6);
    // The host cap is no seed budget: both seeds ran out of pages to crawl.
    expect(seedLines("hosts").map((l) => [l.pages, l.end])).toEqual([[3, "done"], [3, "done"]]);
  }, 120_000);

  it("a seed whose pages are still queued when --timeLimit stops the crawl ends timeLimit", async () => {
    const site = big[2];
    // The time limit (5 s: time for the browser to start) ends the seed page's 60 s --pageExtraDelay: its two links stay queued.
    const result = await runCli("crawl", ["--url", `${site.url}/page/0.html`, "--timeLimit", "5", "--pageExtraDelay", "60", "--cwd", cwd, "--collection", "timed", "--workers", "1", ...FAST]);
    expect(result.code, result.stderr.slice(-3000)).toBe(15);
    expect(crawledPages("timed")).toEqual(pagesOf(site, [0]));
    expect(seedLines("timed")).toEqual([{ seedId: 0, url: `${site.url}/page/0.html`, pages: 1, bytes: warcBytesBySite("timed", [site])[0], end: "timeLimit", limit: 0, sizeLimit: 0 }]);
  }, 120_000);

  it.concurrent("an interrupted crawl writes what it knows: a seed with pages still queued ends interrupted; resumed from its state file, the budget goes on from its counts", async () => {
    const site = big[1];
    const result = await crawlInterruptedAfterFirstPage(["--url", `${site.url}/page/0.html`, "--seedPageLimit", "10", "--cwd", cwd, "--collection", "stopped", "--workers", "1", "--pageExtraDelay", "1", ...FAST]);
    expect(result.code, result.stderr.slice(-3000)).toBe(11);
    const crawled = crawledPages("stopped");
    expect(crawled.length).toBeGreaterThanOrEqual(1);
    expect(crawled.length).toBeLessThan(10);
    expect(seedLines("stopped")).toEqual([{ seedId: 0, url: `${site.url}/page/0.html`, pages: crawled.length, bytes: warcBytesBySite("stopped", [site])[0], end: "interrupted", limit: 10, sizeLimit: 0 }]);

    // Resumed from its state file into a fresh Redis (another collection): the budget goes on from what the
    // first run counted. Before the counts were saved, the resumed run crawled 10 more pages.
    const states = readdirSync(join(collectionDir("stopped"), "crawls")).filter((f) => f.endsWith(".yaml"));
    expect(states).toHaveLength(1);
    const stateFile = readFileSync(join(collectionDir("stopped"), "crawls", states[0]), "utf8");
    expect(stateFile).toContain("budgetCounts:");
    // (The first run's --pageExtraDelay, there to stop it before the budget is spent, is not needed now.)
    const resumed = await runCli("crawl", ["--config", join(collectionDir("stopped"), "crawls", states[0]), "--cwd", cwd, "--collection", "resumed", "--pageExtraDelay", "0", ...FAST]);
    expect(resumed.code, resumed.stderr.slice(-3000)).toBe(0);
    const again = crawledPages("resumed");
    expect(again.filter((url) => crawled.includes(url))).toEqual([]);
    expect(crawled.length + again.length).toBe(10);
    // Depth-major with one worker: the first ten pages of the site, between the two runs.
    expect([...crawled, ...again].sort()).toEqual(pagesOf(site, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).sort());
    const bytes = warcBytesBySite("stopped", [site])[0] + warcBytesBySite("resumed", [site])[0];
    expect(seedLines("resumed")).toEqual([{ seedId: 0, url: `${site.url}/page/0.html`, pages: 10, bytes, end: "pageLimit", limit: 10, sizeLimit: 0 }]);
  }, 180_000);

  it.concurrent("two processes on one crawl share a seed's budget: exactly its limit of pages, not one more", async () => {
    const site = big[3];
    const redis = await startTestRedis();
    try {
      const args = [
        "--url", `${site.url}/page/0.html`, "--seedPageLimit", "5", "--crawlId", "shared", "--collection", "shared", "--cwd", cwd,
        "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--workers", "3", ...FAST,
      ];
      const run = () => new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        child.on("exit", (code) => resolve({ code, stderr }));
      });
      const results = await Promise.all([run(), run()]);
      for (const r of results) expect(r.code, r.stderr.slice(-3000)).toBe(0);
      // Each page's document in the WARC files of both processes: five, however the two processes' six tabs raced.
      const archive = join(collectionDir("shared"), "archive");
      const documents = readdirSync(archive).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(archive, f)))
        .filter((r) => r.headers.get("warc-type") === "response" && /\/page\/\d+\.html$/.test(r.headers.get("warc-target-uri") ?? ""));
      expect(new Set(documents.map((r) => r.headers.get("warc-target-uri"))).size).toBe(5);
      expect(documents).toHaveLength(5);
      // Crawled by the two processes together: five "page crawled" lines in their logs.
      const crawledBy = results.map((r) => r.stderr.split('"message":"page crawled"').length - 1);
      expect(crawledBy[0] + crawledBy[1]).toBe(5);
      const [line] = seedLines("shared");
      expect(line).toMatchObject({ seedId: 0, pages: 5, end: "pageLimit", limit: 5 });
      expect(line.bytes).toBe(warcBytesBySite("shared", [site])[0]);
      expect(await redis.client.hlen("shared:budgetSlots")).toBe(0);
    } finally {
      await redis.stop();
    }
  }, 180_000);

  it.concurrent("a seed's budget in --config and the budget flags are refused by name when wrong", async () => {
    const config = join(cwd, "bad-budget.yaml");
    writeFileSync(config, `seeds:\n  - url: ${small.url}/page/0.html\n    limit: many\n`);
    const bad = await runCli("crawl", ["--config", config, "--cwd", cwd]);
    expect(bad.code).toBe(4);
    expect(bad.stderr.trimEnd()).toBe(`crawl: seed ${small.url}/page/0.html: limit must be a whole number, got "many"`);
    const badFlag = await runCli("crawl", ["--url", `${small.url}/page/0.html`, "--seedSizeLimit", "lots", "--cwd", cwd]);
    expect(badFlag.code).toBe(4);
    expect(badFlag.stderr.trimEnd()).toBe(`crawl: --seedSizeLimit must be a size like 1000000, 64KB, 10MB or 1GB, got "lots"`);
    expect(existsSync(join(cwd, "collections", "bad"))).toBe(false);
  });
});
