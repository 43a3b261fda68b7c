import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../../../bench/lib/generatedSite.js";
import { EmbeddedRedis } from "../../../src/redis/embedded.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { gzipMembers, httpStatus, parseRecord, readWarcRecords, sha256 } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";
import { NO_BEHAVIORS } from "../../helpers/cli.js";

// Every test crawls one generated site, as small as their points allow: enough pages that each of three
// processes gets some, and that a kill after a few pages lands mid-crawl (a single process crawls about
// two pages a second). Kills at many more moments: test/e2e/faults/reliability.e2e.test.ts.
const PAGES = 30;
let site: GeneratedSite;
let cwd: string;
/** Pages of its own that one of three processes crawls before it is killed; a single process, before a fault. */
const ONE_OF_THREE_KILLED_AFTER = 4;
const SINGLE_KILLED_AFTER = 8;
const expectedPages = Array.from({ length: PAGES }, (_, i) => `/page/${i}.html`).sort();

beforeAll(async () => {
  site = await startGeneratedSite(PAGES);
  cwd = mkdtempSync(join(tmpdir(), "crawl-multi-"));
});
afterAll(async () => {
  await (await threeCrawl?.catch(() => undefined))?.redis.stop();
  await site.close();
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

/** The first of these processes to have crawled `pages` pages (or to exit). */
async function firstToCrawl(running: Running[], pages: number): Promise<Running> {
  for (;;) {
    const first = running.find((r) => r.pagesCrawled() >= pages || r.child.exitCode !== null);
    if (first) return first;
    await new Promise((r) => setTimeout(r, 100));
  }
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
  // The pages the archive lists: those in the WACZ files' pages lists.
  const pageUrls: string[] = [];
  for (const file of waczFiles) {
    const wacz = await readZip(join(dir, file));
    for (const p of ["pages/pages.jsonl", "pages/extraPages.jsonl"]) {
      pageUrls.push(...(wacz.get(p)?.data.toString().trim().split("\n").slice(1) ?? []).map((l) => new URL((JSON.parse(l) as { url: string }).url).pathname));
    }
  }
  const responses = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!));
  return { records, responses, pageUrls, waczFiles };
}

/** Every page listed in a WACZ of the collection resolves there or in a WACZ its datapackage requires. */
async function unresolvedPages(collection: string): Promise<string[]> {
  const dir = join(cwd, "collections", collection);
  const waczs = new Map<string, { pages: string[]; captured: Set<string>; requires: string[] }>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".wacz"))) {
    const zip = await readZip(join(dir, file));
    const datapackage = JSON.parse(zip.get("datapackage.json")!.data.toString()) as { relation?: { requires?: { filename: string }[] } };
    const pages = ["pages/pages.jsonl", "pages/extraPages.jsonl"].flatMap((p) => zip.get(p)?.data.toString().trim().split("\n").slice(1) ?? []).map((l) => (JSON.parse(l) as { url: string }).url);
    const captured = new Set<string>();
    for (const [name, entry] of zip) {
      if (!name.startsWith("archive/") || !name.endsWith(".warc.gz")) continue;
      for (const m of gzipMembers(entry.data)) {
        const r = parseRecord(m.data, m.offset, m.length);
        if (["response", "revisit"].includes(r.headers.get("warc-type")!)) captured.add(r.headers.get("warc-target-uri")!);
      }
    }
    waczs.set(file, { pages, captured, requires: (datapackage.relation?.requires ?? []).map((r) => r.filename) });
  }
  const unresolved: string[] = [];
  for (const [file, w] of waczs) {
    for (const page of w.pages) {
      if (![file, ...w.requires].some((f) => waczs.get(f)?.captured.has(page))) unresolved.push(`${file}: ${page}`);
    }
  }
  return unresolved;
}

interface ThreeCrawl {
  redis: TestRedis;
  crawlers: Running[];
  codes: (number | null)[];
}

/**
 * Three processes crawl the site together, once for the file: the first test checks that crawl, and the
 * SIGINT test takes its counts as those of an uninterrupted crawl (the same command, the same site).
 */
let threeCrawl: Promise<ThreeCrawl> | undefined;
function crawlWithThree(): Promise<ThreeCrawl> {
  threeCrawl ??= (async () => {
    const redis = await startTestRedis(true);
    const crawlers = [0, 1, 2].map(() => startCrawler("three", redis.url));
    const codes = await Promise.all(crawlers.map((c) => c.done));
    return { redis, crawlers, codes };
  })();
  return threeCrawl;
}

describe("several crawler processes on one crawl", () => {
  it("three processes share the queue: every page once, one WACZ each, committed once", async () => {
    const { redis, crawlers, codes } = await crawlWithThree();
    expect(codes).toEqual([0, 0, 0]);
    const { responses, pageUrls, waczFiles } = await verifyCollection("three");
    expect([...pageUrls].sort()).toEqual(expectedPages);
    const keys = responses.map((r) => `${httpStatus(r)} ${r.headers.get("warc-target-uri")}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(crawlers.every((c) => c.pagesCrawled() > 0), `pages per process: ${crawlers.map((c) => c.pagesCrawled())}`).toBe(true);
    expect(waczFiles).toEqual(["three-w1.wacz", "three-w2.wacz", "three.wacz"]);
    const waczList = (await redis.client.lrange("c:three:wacz", 0, -1)).map((j) => JSON.parse(j));
    expect(waczList.map((w) => w.filename).sort()).toEqual(waczFiles);
    expect(waczList.every((w) => typeof w.hash === "string" && w.size > 0)).toBe(true);
    expect(await redis.client.smembers("allcrawls")).toEqual(["three"]);
    expect(await redis.client.hget("h:three:counts", "totalUrls")).toBe(String(responses.length));
    expect(await redis.client.hget("allcounts", "totalUrls")).toBe(String(responses.length));
  }, 240_000);

  // The next two run side by side (their own Redis and collection; maxConcurrency in vitest.config.ts): the
  // stalled one mostly waits out a heartbeat.
  it.concurrent("one of three killed with SIGKILL: the crawl still completes, no page twice, its files packaged", async () => {
    const redis = await startTestRedis(true);
    try {
      const crawlers = [0, 1, 2].map(() => startCrawler("killed", redis.url));
      // The first to crawl a few pages of its share (a third) is killed while it still holds some: not one
      // chosen in advance, which may start late and crawl little on a loaded machine.
      const victim = await firstToCrawl(crawlers, ONE_OF_THREE_KILLED_AFTER);
      const survivors = crawlers.filter((c) => c !== victim);
      // Still running when killed, and killed by the signal: a crash must not pass for a kill.
      expect({ exitCode: victim.child.exitCode, signal: victim.child.signalCode }).toEqual({ exitCode: null, signal: null });
      victim.child.kill("SIGKILL");
      const codes = await Promise.all(survivors.map((c) => c.done));
      await victim.done;
      expect(victim.child.signalCode).toBe("SIGKILL");
      expect(codes[0]).toBe(0);
      expect(codes[1]).toBe(0);
      const { pageUrls, waczFiles } = await verifyCollection("killed");
      // No page twice: one the killed process listed but did not finish is listed by whoever finished it.
      expect([...pageUrls].sort()).toEqual(expectedPages);
      expect(waczFiles).toHaveLength(3);
      expect(await redis.client.smembers("allcrawls")).toEqual(["killed"]);
      expect(await redis.client.llen(crawlStateKeys("killed").frontierShard(0).failed)).toBe(0);
    } finally {
      await redis.stop();
    }
  }, 240_000);

  it.concurrent("one stalled (SIGSTOP) past its lease, then resumed, is fenced: exits 1 and writes nothing more; the survivor commits; every listed page resolves, none twice", async () => {
    const redis = await startTestRedis(true);
    const archive = join(cwd, "collections", "stalled", "archive");
    const ownerOf = (marker: string) => {
      try {
        return readFileSync(join(archive, marker), "utf8").split("\n")[1];
      } catch {
        return null; // closed meanwhile
      }
    };
    const markers = () => new Map(readdirSync(archive).filter((f) => f.endsWith(".open")).map((f) => [f.replace(/\.open$/, ""), ownerOf(f)] as const));
    try {
      const [stalled, survivor] = [0, 1].map(() => startCrawler("stalled", redis.url));
      await whenCrawled(stalled, 3);
      expect(stalled.child.exitCode).toBeNull();
      stalled.child.kill("SIGSTOP");
      // Past its heartbeat (15 s): the survivor takes it for dead, fences it and takes over its pages (it
      // waits for them once the queue is empty, so the site need not last that long).
      const deadline = Date.now() + 120_000;
      let fenced: string[] = [];
      while (!fenced.length && Date.now() < deadline && survivor.child.exitCode === null) {
        await new Promise((r) => setTimeout(r, 500));
        fenced = await redis.client.smembers("stalled:fenced");
      }
      expect(fenced).toHaveLength(1);
      const stalledFiles = [...markers()].filter(([, owner]) => owner === fenced[0]).map(([warc]) => warc);
      expect(stalledFiles.length).toBeGreaterThan(0);
      const sizesAtResume = new Map(stalledFiles.map((f) => [f, statSync(join(archive, f)).size]));
      stalled.child.kill("SIGCONT");

      expect(await stalled.done).toBe(1);
      // Nothing written after the fence: its files did not grow, and it opened no new one.
      for (const [file, size] of sizesAtResume) expect(statSync(join(archive, file)).size, file).toBeLessThanOrEqual(size);
      expect([...markers()].filter(([warc, owner]) => owner === fenced[0] && !sizesAtResume.has(warc))).toEqual([]);

      expect(await survivor.done).toBe(0);
      expect(await redis.client.smembers("allcrawls")).toEqual(["stalled"]);
      const { pageUrls } = await verifyCollection("stalled");
      expect([...pageUrls].sort()).toEqual(expectedPages);
      expect(await unresolvedPages("stalled")).toEqual([]);
    } finally {
      await redis.stop();
    }
  }, 300_000);
});

describe("a crawl that survives faults", () => {
  // These run two at a time (one crawler each, their own Redis and collection; maxConcurrency in vitest.config.ts).
  it.concurrent("SIGINT then the same command again: complete, with the counts of an uninterrupted crawl", async () => {
    const redis = await startTestRedis(true);
    try {
      const first = startCrawler("interrupted", redis.url);
      await whenCrawled(first, SINGLE_KILLED_AFTER);
      first.child.kill("SIGINT");
      expect(await first.done).toBe(11);
      expect(await redis.client.sismember("uncommittedcrawls", "interrupted")).toBe(1);
      expect(await startCrawler("interrupted", redis.url).done).toBe(0);
      // The uninterrupted reference: the three-process crawl of the same site with the same command.
      const reference = await crawlWithThree();
      expect(reference.codes).toEqual([0, 0, 0]);
      const resumed = await verifyCollection("interrupted");
      expect([...new Set(resumed.pageUrls)].sort()).toEqual(expectedPages);
      const counts = await redis.client.hgetall("h:interrupted:counts");
      const referenceCounts = await reference.redis.client.hgetall("h:three:counts");
      expect({ ...counts, totalCrawlSize: "-" }).toEqual({ ...referenceCounts, totalCrawlSize: "-" });
      expect(counts.totalUrls).toBe(String(resumed.responses.length));
    } finally {
      await redis.stop();
    }
  }, 240_000);

  it.concurrent("redis-server stopped for a few seconds mid-crawl: the crawl waits, then completes", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "crawl-redis-restart-"));
    let server = new EmbeddedRedis({ dataDir, persist: true });
    const url = await server.start();
    try {
      const crawler = startCrawler("redisdown", url);
      await whenCrawled(crawler, SINGLE_KILLED_AFTER);
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

  it.concurrent("Chromium killed mid-crawl: a new browser is started and the crawl completes", async () => {
    const redis = await startTestRedis(true);
    try {
      const crawler = startCrawler("browserdied", redis.url, ["--statsFilename", join(cwd, "browserdied.json")]);
      await whenCrawled(crawler, SINGLE_KILLED_AFTER);
      // Only this crawler's browser (from its record in the collection), not every Chromium on the machine.
      const records = join(cwd, "collections", "browserdied", "browsers");
      for (const name of readdirSync(records)) process.kill((JSON.parse(readFileSync(join(records, name), "utf8")) as { browserPid: number }).browserPid, "SIGKILL");
      expect(await crawler.done).toBe(0);
      const stats = JSON.parse(readFileSync(join(cwd, "browserdied.json"), "utf8"));
      expect(stats.browserLaunches).toBeGreaterThanOrEqual(2);
      expect(stats, JSON.stringify(stats)).toMatchObject({ crawled: PAGES, failed: 0, status: "done" });
      await verifyCollection("browserdied");
    } finally {
      await redis.stop();
    }
  }, 240_000);
});
