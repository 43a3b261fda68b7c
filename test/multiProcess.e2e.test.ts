import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../bench/lib/generatedSite.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { startTestRedis, type TestRedis } from "./helpers/redis.js";
import { httpStatus, readWarcRecords, sha256 } from "./helpers/warcFile.js";
import { readZip } from "./helpers/zip.js";
import { NO_BEHAVIORS } from "./helpers/cli.js";

// The multi-process tests crawl a 100-page site; the single-process fault tests a 40-page one (CI time:
// behaviors run on every page by default). Kills at many more moments: test/reliability.e2e.test.ts.
const PAGES = 100;
const FAULT_PAGES = 40;
let bigSite: GeneratedSite;
let smallSite: GeneratedSite;
let site: GeneratedSite;
let cwd: string;
let expectedPages: string[];
const pagesOf = (n: number) => Array.from({ length: n }, (_, i) => `/page/${i}.html`).sort();

beforeAll(async () => {
  bigSite = await startGeneratedSite(PAGES);
  smallSite = await startGeneratedSite(FAULT_PAGES);
  cwd = mkdtempSync(join(tmpdir(), "crawl-multi-"));
});
afterAll(async () => {
  await bigSite.close();
  await smallSite.close();
  rmSync(cwd, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  done: Promise<number | null>;
  pagesCrawled: () => number;
}

function startCrawler(collection: string, redisUrl: string, extra: string[] = []): Running {
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", "--url", `${site.url}/page/0.html`, "--crawlId", collection, "--collection", collection, "--cwd", cwd, ...NO_BEHAVIORS,
    "--redisStoreUrl", redisUrl, "--redisDedupeUrl", redisUrl, "--generateWACZ", "--workers", "2", "--netIdleWait", "1", ...extra,
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let crawled = 0;
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    const text = d.toString();
    stderr += text;
    crawled += text.split('"message":"page crawled"').length - 1;
  });
  const done = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, done, pagesCrawled: () => crawled };
}

async function whenCrawled(running: Running, pages: number): Promise<void> {
  while (running.pagesCrawled() < pages && running.child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
}

/** Re-read every WARC and WACZ of a collection: digests, datapackage hashes; returns pages and responses. */
async function verifyCollection(collection: string) {
  const dir = join(cwd, "collections", collection);
  const records = readdirSync(join(dir, "archive")).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
  for (const r of records.filter((r) => r.headers.get("warc-type") !== "warcinfo")) {
    expect(r.headers.get("warc-block-digest")).toBe(sha256(r.block));
    if (r.headers.get("warc-type") === "response") expect(r.headers.get("warc-payload-digest")).toBe(sha256(r.payload));
  }
  const waczFiles = readdirSync(dir).filter((f) => f.endsWith(".wacz")).sort();
  for (const file of waczFiles) {
    const wacz = await readZip(join(dir, file));
    const datapackage = JSON.parse(wacz.get("datapackage.json")!.data.toString());
    for (const resource of datapackage.resources as { path: string; hash: string }[]) {
      expect(resource.hash).toBe(sha256(wacz.get(resource.path)!.data));
    }
  }
  const pageUrls = [dir, ...readdirSync(join(dir, "pages"), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(dir, "pages", d.name))]
    .flatMap((d) => ["pages.jsonl", "extraPages.jsonl"].map((f) => (d === dir ? join(dir, "pages", f) : join(d, f))))
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, "utf8").trim().split("\n").slice(1).map((l) => new URL((JSON.parse(l) as { url: string }).url).pathname));
  const responses = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!));
  return { records, responses, pageUrls, waczFiles };
}

describe("several crawler processes on one crawl", () => {
  beforeAll(() => {
    site = bigSite;
    expectedPages = pagesOf(PAGES);
  });

  it("three processes share the queue: every page once, one WACZ each, committed once", async () => {
    const redis = await startTestRedis(true);
    try {
      const crawlers = [0, 1, 2].map(() => startCrawler("three", redis.url));
      const codes = await Promise.all(crawlers.map((c) => c.done));
      expect(codes).toEqual([0, 0, 0]);
      const { responses, pageUrls, waczFiles } = await verifyCollection("three");
      expect([...pageUrls].sort()).toEqual(expectedPages);
      const keys = responses.map((r) => `${httpStatus(r)} ${r.headers.get("warc-target-uri")}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(crawlers.every((c) => c.pagesCrawled() > 0)).toBe(true);
      expect(waczFiles).toEqual(["three-w1.wacz", "three-w2.wacz", "three.wacz"]);
      const waczList = (await redis.client.lrange("c:three:wacz", 0, -1)).map((j) => JSON.parse(j));
      expect(waczList.map((w) => w.filename).sort()).toEqual(waczFiles);
      expect(waczList.every((w) => typeof w.hash === "string" && w.size > 0)).toBe(true);
      expect(await redis.client.smembers("allcrawls")).toEqual(["three"]);
      expect(await redis.client.hget("h:three:counts", "totalUrls")).toBe(String(responses.length));
      expect(await redis.client.hget("allcounts", "totalUrls")).toBe(String(responses.length));
    } finally {
      await redis.stop();
    }
  }, 240_000);

  it("one of three killed with SIGKILL: the crawl still completes, no page twice, its files packaged", async () => {
    const redis = await startTestRedis(true);
    try {
      const crawlers = [0, 1, 2].map(() => startCrawler("killed", redis.url));
      await whenCrawled(crawlers[1], 10);
      crawlers[1].child.kill("SIGKILL");
      const codes = await Promise.all(crawlers.map((c) => c.done));
      expect(codes[0]).toBe(0);
      expect(codes[2]).toBe(0);
      const { pageUrls, waczFiles } = await verifyCollection("killed");
      expect([...new Set(pageUrls)].sort()).toEqual(expectedPages);
      expect(pageUrls.length).toBeLessThanOrEqual(PAGES + 1); // at most the page being listed when killed
      expect(waczFiles).toHaveLength(3);
      expect(await redis.client.smembers("allcrawls")).toEqual(["killed"]);
      expect(await redis.client.llen("killed:f")).toBe(0);
    } finally {
      await redis.stop();
    }
  }, 240_000);
});

describe("a crawl that survives faults", () => {
  beforeAll(() => {
    site = smallSite;
    expectedPages = pagesOf(FAULT_PAGES);
  });

  it("SIGINT then the same command again: complete, with the counts of an uninterrupted crawl", async () => {
    const redis = await startTestRedis(true);
    const reference = await startTestRedis(true);
    try {
      const first = startCrawler("interrupted", redis.url);
      await whenCrawled(first, 10);
      first.child.kill("SIGINT");
      expect(await first.done).toBe(11);
      expect(await redis.client.sismember("uncommittedcrawls", "interrupted")).toBe(1);
      expect(await startCrawler("interrupted", redis.url).done).toBe(0);
      expect(await startCrawler("uninterrupted", reference.url).done).toBe(0);
      const resumed = await verifyCollection("interrupted");
      expect([...new Set(resumed.pageUrls)].sort()).toEqual(expectedPages);
      const counts = await redis.client.hgetall("h:interrupted:counts");
      const referenceCounts = await reference.client.hgetall("h:uninterrupted:counts");
      expect({ ...counts, totalCrawlSize: "-" }).toEqual({ ...referenceCounts, totalCrawlSize: "-" });
      expect(counts.totalUrls).toBe(String(resumed.responses.length));
    } finally {
      await redis.stop();
      await reference.stop();
    }
  }, 240_000);

  it("redis-server stopped for a few seconds mid-crawl: the crawl waits, then completes", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "crawl-redis-restart-"));
    let server = new EmbeddedRedis({ dataDir, persist: true });
    const url = await server.start();
    try {
      const crawler = startCrawler("redisdown", url);
      await whenCrawled(crawler, 10);
      await server.stop(); // SIGTERM: Redis writes its append-only file and exits
      await new Promise((r) => setTimeout(r, 4000));
      server = new EmbeddedRedis({ dataDir, persist: true, port: server.port });
      await server.start();
      expect(await crawler.done).toBe(0);
      const { pageUrls } = await verifyCollection("redisdown");
      expect([...new Set(pageUrls)].sort()).toEqual(expectedPages);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  it("Chromium killed mid-crawl: a new browser is started and the crawl completes", async () => {
    const redis = await startTestRedis(true);
    try {
      const crawler = startCrawler("browserdied", redis.url, ["--statsFilename", join(cwd, "browserdied.json")]);
      await whenCrawled(crawler, 10);
      // Only this crawler's browser (from its record in the collection), not every Chromium on the machine.
      const records = join(cwd, "collections", "browserdied", "browsers");
      for (const name of readdirSync(records)) process.kill((JSON.parse(readFileSync(join(records, name), "utf8")) as { browserPid: number }).browserPid, "SIGKILL");
      expect(await crawler.done).toBe(0);
      const stats = JSON.parse(readFileSync(join(cwd, "browserdied.json"), "utf8"));
      expect(stats.browserLaunches).toBeGreaterThanOrEqual(2);
      expect(stats, JSON.stringify(stats)).toMatchObject({ crawled: FAULT_PAGES, failed: 0, status: "done" });
      await verifyCollection("browserdied");
    } finally {
      await redis.stop();
    }
  }, 240_000);
});
