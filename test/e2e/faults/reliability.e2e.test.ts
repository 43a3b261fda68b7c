/**
 * The standing reliability suite: three crawler processes share one crawl (same --crawlId and Redis,
 * each its own --collection folder, as separate machines would), one is killed with SIGKILL at a
 * seeded random moment and started again with the same command. Afterwards every page must be in a
 * WACZ once and resolve there or in what it requires, every revisit must resolve to a record in
 * its own WACZ or in one its datapackage.json requires (by name, hash and size), the captured URLs
 * must be those of an uninterrupted crawl, and the crawl must be committed once.
 *
 * RELIABILITY_SEED=<n> reproduces a run (the seed is printed).
 */
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { gzipMembers, httpStatus, parseRecord, sha256, type RawRecord } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";
import { NO_BEHAVIORS } from "../../helpers/cli.js";
import { seededRandom } from "../../helpers/seededRandom.js";

const SEED = Number(process.env.RELIABILITY_SEED ?? 20261123);
// Twenty pages and their photos: enough for each of the six tabs to crawl several, and for the middle kill to
// land with pages on both sides of it.
const PAGES = 20;
const WORKERS = 2;
const ROOT = join(import.meta.dirname, "../../..");

const random = seededRandom(SEED);
const pick = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));

type Moment =
  | { kind: "after-own-pages"; pages: number }
  | { kind: "after-total-pages"; pages: number }
  | { kind: "pause"; point: "before-package" | "before-commit" | "commit-merged" };

// In-page behaviors (on by default, about a second a page) run in the first scenario, where the kill lands
// while they do; the others crawl without them (CI time: the kill moments, not the behaviors, are what they vary).
const SCENARIOS: { name: string; moment: Moment; victim: number; behaviors?: "default" }[] = [
  { name: "early, after its first pages", moment: { kind: "after-own-pages", pages: pick(1, 3) }, victim: pick(0, 2), behaviors: "default" },
  { name: "in the middle of the crawl", moment: { kind: "after-total-pages", pages: pick(5, 14) }, victim: pick(0, 2) },
  { name: "while packaging its WACZ", moment: { kind: "pause", point: "before-package" }, victim: -1 },
  { name: "after packaging, before the commit", moment: { kind: "pause", point: "before-commit" }, victim: -1 },
  { name: "between commit steps (hashes merged, crawl not yet marked committed)", moment: { kind: "pause", point: "commit-merged" }, victim: -1 },
];

let site: FaultySite;
let cwd: string;
const runLog: Record<string, unknown>[] = [];
beforeAll(async () => {
  site = await startFaultySite(PAGES, {});
  cwd = mkdtempSync(join(tmpdir(), "crawl-reliability-"));
  console.log(`reliability suite: RELIABILITY_SEED=${SEED}`);
});
afterAll(async () => {
  console.log(`reliability runs: ${JSON.stringify(runLog)}`);
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
});

interface Crawler {
  child: ChildProcess;
  exit: Promise<number | null>;
  /** How it ended: an exit code, or the signal that killed it. */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  crawled: () => number;
  log: () => string;
}

function startCrawler(crawlId: string, collection: string, redisUrl: string, env: Record<string, string> = {}, behaviors?: "default"): Crawler {
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", "--url", `${site.url}/`, "--crawlId", crawlId, "--collection", collection, "--cwd", cwd,
    "--redisStoreUrl", redisUrl, "--redisDedupeUrl", redisUrl, "--generateWACZ", "--workers", String(WORKERS), "--netIdleWait", "1",
    ...(behaviors === "default" ? [] : NO_BEHAVIORS),
  ], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const exit = ended.then(({ code }) => code);
  return { child, exit, ended, crawled: () => stderr.split('"message":"page crawled').length - 1, log: () => stderr };
}

/** SIGKILL a crawler that must still be running: one that crashed or exited on its own is no kill. */
async function killRunning(crawler: Crawler): Promise<void> {
  expect({ exitCode: crawler.child.exitCode, signal: crawler.child.signalCode }, `victim ended on its own before the kill:\n${crawler.log().slice(-1500)}`).toEqual({ exitCode: null, signal: null });
  crawler.child.kill("SIGKILL");
  expect(await crawler.ended).toEqual({ code: null, signal: "SIGKILL" });
}

async function until(condition: () => boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the kill moment");
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface WaczView {
  name: string;
  requires: { filename: string; hash: string; size: number }[];
  pages: string[];
  records: RawRecord[];
}

async function readCrawlWaczs(collections: string[]): Promise<WaczView[]> {
  const views: WaczView[] = [];
  for (const collection of collections) {
    const dir = join(cwd, "collections", collection);
    for (const name of readdirSync(dir).filter((f) => f.endsWith(".wacz")).sort()) {
      const zip = await readZip(join(dir, name));
      const datapackage = JSON.parse(zip.get("datapackage.json")!.data.toString()) as {
        resources: { path: string; hash: string }[];
        relation?: { requires?: { filename: string; hash: string; size: number }[] };
      };
      for (const resource of datapackage.resources) expect(resource.hash, `${name} ${resource.path}`).toBe(sha256(zip.get(resource.path)!.data));
      const pages = ["pages/pages.jsonl", "pages/extraPages.jsonl"]
        .flatMap((p) => zip.get(p)?.data.toString().trim().split("\n").slice(1) ?? [])
        .map((l) => (JSON.parse(l) as { url: string }).url);
      const records = [...zip.keys()]
        .filter((p) => p.startsWith("archive/") && p.endsWith(".warc.gz"))
        .flatMap((p) => gzipMembers(zip.get(p)!.data).map((m) => parseRecord(m.data, m.offset, m.length)));
      views.push({ name, requires: datapackage.relation?.requires ?? [], pages, records });
    }
  }
  return views;
}

async function verifyCrawl(crawlId: string, collections: string[], redis: TestRedis) {
  const waczs = await readCrawlWaczs(collections);
  const fileOf = new Map<string, string>();
  for (const c of collections) for (const f of readdirSync(join(cwd, "collections", c)).filter((f) => f.endsWith(".wacz"))) fileOf.set(f, join(cwd, "collections", c, f));

  // Every page in a WACZ, once: a page the killed process listed but did not finish is listed only by
  // whoever finished it.
  const expectedPages = site.pagePaths.map((p) => `${site.url}${p}`).sort();
  const listed = waczs.flatMap((w) => w.pages);
  expect([...listed].sort()).toEqual(expectedPages);

  // Every listed page resolves: its URL is captured in its own WACZ or in one that WACZ requires.
  const capturedIn = new Map(waczs.map((w) => [w.name, new Set(w.records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!)).map((r) => r.headers.get("warc-target-uri")))]));
  for (const w of waczs) {
    for (const page of w.pages) {
      expect([w.name, ...w.requires.map((q) => q.filename)].some((f) => capturedIn.get(f)?.has(page)), `${page} listed in ${w.name} resolves`).toBe(true);
    }
  }

  // Captured URLs: those of an uninterrupted crawl (pages, their photos, the shared logo and stylesheet).
  const http = waczs.flatMap((w) => w.records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!)).map((r) => ({ w, r })));
  const captured = new Set(http.filter(({ r }) => httpStatus(r) === 200).map(({ r }) => new URL(r.headers.get("warc-target-uri")!).pathname));
  const expectedCaptured = new Set([
    ...site.pagePaths,
    "/static/site.css",
    "/static/logo.png",
    ...site.pagePaths.map((p) => `/static/photo-${p === "/" ? "home" : p.split("/").pop()}.png`),
  ]);
  expect([...captured].sort()).toEqual([...expectedCaptured].sort());

  // Every revisit resolves: its original is in the same WACZ or in one listed in relation.requires,
  // and each listed requirement matches that file's real hash and size.
  const originals = new Map<string, string>();
  for (const w of waczs) for (const r of w.records.filter((r) => r.headers.get("warc-type") === "response")) originals.set(`${r.headers.get("warc-target-uri")} ${r.headers.get("warc-date")}`, w.name);
  let revisits = 0;
  for (const { w, r } of http.filter(({ r }) => r.headers.get("warc-type") === "revisit")) {
    revisits += 1;
    const container = originals.get(`${r.headers.get("warc-refers-to-target-uri")} ${r.headers.get("warc-refers-to-date")}`);
    expect(container, `original of revisit ${r.headers.get("warc-target-uri")} in ${w.name}`).toBeDefined();
    if (container !== w.name) expect(w.requires.map((q) => q.filename), `${w.name} requires ${container}`).toContain(container);
  }
  for (const w of waczs) {
    for (const q of w.requires) {
      const bytes = readFileSync(fileOf.get(q.filename)!);
      expect({ hash: q.hash, size: q.size }).toEqual({ hash: sha256(bytes), size: bytes.length });
    }
  }

  // Committed once, with a complete entry for every WACZ.
  expect(await redis.client.sismember("allcrawls", crawlId)).toBe(1);
  expect(await redis.client.sismember("uncommittedcrawls", crawlId)).toBe(0);
  const entries = (await redis.client.lrange(`c:${crawlId}:wacz`, 0, -1)).map((j) => JSON.parse(j) as { filename: string; hash?: string; size?: number });
  expect(entries.map((e) => e.filename).sort()).toEqual(waczs.map((w) => w.name).sort());
  for (const e of entries) {
    const bytes = readFileSync(fileOf.get(e.filename)!);
    expect({ hash: e.hash, size: e.size }).toEqual({ hash: sha256(bytes), size: bytes.length });
  }
  expect(await redis.client.llen(crawlStateKeys(crawlId).frontierShard(0).failed)).toBe(0);
  return { waczs: waczs.length, revisits };
}

describe(`a shared crawl survives a member killed at any moment (seed ${SEED})`, () => {
  for (const [n, scenario] of SCENARIOS.entries()) {
    it(`killed ${scenario.name}`, async () => {
      const redis = await startTestRedis(true);
      const crawlId = `rel${n}`;
      const collections = [0, 1, 2].map((i) => `${crawlId}-p${i + 1}`);
      try {
        const { moment } = scenario;
        const pauseEnv: Record<string, string> = moment.kind === "pause" ? { CRAWLER_TEST_PAUSE_AT: moment.point, CRAWLER_TEST_PAUSE_MS: "4000" } : {};
        const crawlers = collections.map((c) => startCrawler(crawlId, c, redis.url, pauseEnv, scenario.behaviors));
        let victim = scenario.victim;
        if (moment.kind === "after-own-pages") await until(() => crawlers[victim].crawled() >= moment.pages || crawlers[victim].child.exitCode !== null);
        else if (moment.kind === "after-total-pages") await until(() => crawlers.reduce((sum, c) => sum + c.crawled(), 0) >= moment.pages);
        else {
          await until(() => crawlers.some((c) => c.log().includes(`test pause at ${moment.point}`)));
          victim = crawlers.findIndex((c) => c.log().includes(`test pause at ${moment.point}`));
        }
        const killedAfterPages = crawlers[victim].crawled();
        await killRunning(crawlers[victim]);
        // The same command again (no pause this time).
        const restarted = startCrawler(crawlId, collections[victim], redis.url, {}, scenario.behaviors);
        const codes = await Promise.all([...crawlers.filter((_, i) => i !== victim).map((c) => c.exit), restarted.exit]);
        expect(codes, restarted.log().split("\n").filter((l) => l.includes('"error"')).join("\n")).toEqual([0, 0, 0]);
        const result = await verifyCrawl(crawlId, collections, redis);
        runLog.push({ scenario: scenario.name, victim: victim + 1, killedAfterPages, ...result });
        expect(result.revisits).toBeGreaterThan(0);
      } finally {
        await redis.stop();
      }
    }, 300_000);
  }

  it("a member killed and never restarted: the crawl is not committed, and the survivors say which writer to run again", async () => {
    const redis = await startTestRedis(true);
    const crawlId = "relgone";
    const collections = [0, 1, 2].map((i) => `${crawlId}-p${i + 1}`);
    try {
      const crawlers = collections.map((c) => startCrawler(crawlId, c, redis.url));
      await until(() => crawlers[1].crawled() >= 2 || crawlers[1].child.exitCode !== null);
      await killRunning(crawlers[1]);
      const codes = await Promise.all([crawlers[0].exit, crawlers[2].exit]);
      expect(codes).toEqual([0, 0]);
      expect(await redis.client.sismember("allcrawls", crawlId)).toBe(0);
      const told = [crawlers[0], crawlers[2]].some((c) => c.log().includes("run that crawler again"));
      expect(told).toBe(true);
      // Running it again completes and commits the crawl, with every page.
      const again = startCrawler(crawlId, collections[1], redis.url);
      expect(await again.exit).toBe(0);
      await verifyCrawl(crawlId, collections, redis);
      expect(existsSync(join(cwd, "collections", collections[1], `${collections[1]}.wacz`)) || readdirSync(join(cwd, "collections", collections[1])).some((f) => f.endsWith(".wacz"))).toBe(true);
    } finally {
      await redis.stop();
    }
  }, 300_000);
});
