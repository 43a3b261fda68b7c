// The indexer on the crawler's own WACZ files: real crawls of the fixture site, made once for the whole file.
// A, then B deduping against A (B's revisits need A), with the index the crawler wrote live kept to compare
// imports against; and C in an index of its own (its payloads are A's again: allhashes must pick one crawl, the
// same way every time), rolled over into several WACZ files (revisits within C across its own files), for the
// seeded kill trials: an import, or a purge (--remove), SIGKILLed 1 to 5 times at
// random points, then run twice more, must leave exactly the index of one clean run, key for key (allhashes,
// h:<crawl>, allcounts and conservedSize, WACZ lists, import records...).
// Replay one trial: INDEXER_KILL_SEED=<seed> INDEXER_KILL_TRIALS=1 INDEXER_KILL_MAX_TRIALS=1 npx vitest run test/e2e/indexer/indexer.e2e.test.ts -t "killed at random points"
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { SEED_PATH } from "../../../fixtures/site-manifest.js";
import { writeSyntheticWacz } from "../../../bench/lib/syntheticWacz.js";
import { runCli, NO_BEHAVIORS } from "../../helpers/cli.js";
import { startRangeServer } from "../../helpers/rangeServer.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { sha256 } from "../../helpers/warcFile.js";
import { seededRandom as prng } from "../../helpers/seededRandom.js";

let site: FixtureServer;
let live: TestRedis; // the index the crawler wrote while crawling A and B
let target: TestRedis; // the index the indexer builds
let dir: string;
let fullManifest: string; // C's files, A and B
let keptManifest: string; // A and B: C is purged with --remove
const ROOT = join(import.meta.dirname, "../../..");

const wacz = (name: string) => join(dir, `${name}.wacz`);
const resource = (name: string, crawlId = name) => ({
  name: `${name}.wacz`, path: `${name}.wacz`, hash: sha256(readFileSync(wacz(name))), size: statSync(wacz(name)).size, crawlId,
});
function manifest(file: string, resources: unknown[]): string {
  writeFileSync(join(dir, file), JSON.stringify({ profile: "multi-wacz-package", resources }));
  return join(dir, file);
}
const indexer = (args: string[]) => runCli("indexer", ["--redisDedupeUrl", target.url, ...args]);

/** Everything in a dedupe index except import bookkeeping and timestamps, for exact comparisons. */
async function indexState(redis: Redis): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  for (const key of (await redis.keys("*")).sort()) {
    if (/^(src:|pending:|import:|updateProgress|last_update_ts)/.test(key)) continue;
    const type = await redis.type(key);
    state[key] = type === "hash" ? await redis.hgetall(key) : type === "set" ? (await redis.smembers(key)).sort() : type === "list" ? await redis.lrange(key, 0, -1) : await redis.get(key);
  }
  return state;
}

/**
 * The index equals a clean run's, allhashes included: which of several crawls holding a payload it names
 * follows the manifest's crawl order (crawlorder), not import order (an entry left pending under a killed
 * importer's lease is imported after the others). Every payload is there, naming a crawl that holds it.
 */
async function expectSameIndex(redis: Redis, clean: Record<string, unknown>): Promise<void> {
  const state = await indexState(redis);
  expect(state).toEqual(clean);
  for (const [digest, crawlId] of Object.entries(state["allhashes"] as Record<string, string>)) expect(await redis.hexists(`h:${crawlId}`, digest), digest).toBe(1);
}

/** h:<crawl> with dates cut to 14 digits: CDX timestamps (what the indexer sees) have no fraction. */
async function hashesAtSecondPrecision(redis: Redis, crawlId: string): Promise<Record<string, string>> {
  const hashes = await redis.hgetall(`h:${crawlId}`);
  return Object.fromEntries(Object.entries(hashes).map(([d, v]) => {
    const [index, date, ...rest] = v.split(" ");
    return [d, [index, date.slice(0, 14), ...rest].join(" ")];
  }));
}

// A new base seed each run (so CI runs try many), printed in the test names and failure messages.
const BASE_SEED = Number(process.env.INDEXER_KILL_SEED ?? Math.floor(Math.random() * 1_000_000));
const TRIALS = Number(process.env.INDEXER_KILL_TRIALS ?? 3);
// A kill lands at a time measured on the clean run: on a loaded machine all of TRIALS can land before or after the
// work (a purge takes a few ms). More seeded trials follow then, up to this many, until one leaves work unfinished;
// if none did, one more run is killed while held at a pause point inside the work (pinnedTrial), so every run of
// the test kills some run mid-work, wherever a scheduler put the seeded kills.
const MAX_TRIALS = Math.max(TRIALS, Number(process.env.INDEXER_KILL_MAX_TRIALS ?? 10));

/** Trials to run: TRIALS, then more while none has left work unfinished (up to MAX_TRIALS). */
const moreTrials = (trial: number, unfinished: number) => trial < TRIALS || (unfinished === 0 && trial < MAX_TRIALS);

/** Where to kill a run: `delayMs` after the first log line containing `anchor` (null: after the start). */
interface KillPoint {
  anchor: string | null;
  delayMs: number;
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  ms: number;
  /** ms from the start to the first line with each anchor. */
  anchors: Record<string, number>;
}

/** Run the indexer on the target index; SIGKILL it at `kill` if it has not exited by then. */
function runIndexer(args: string[], anchors: string[], kill?: KillPoint, env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  const started = performance.now();
  const child = spawn(process.execPath, ["dist/indexer/cli.js", "--redisDedupeUrl", target.url, ...args], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  const seen: Record<string, number> = {};
  const arm = () => setTimeout(() => child.kill("SIGKILL"), kill!.delayMs);
  if (kill && kill.anchor === null) arm();
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
    for (const anchor of anchors) {
      if (seen[anchor] !== undefined || !stderr.includes(anchor)) continue;
      seen[anchor] = performance.now() - started;
      if (kill?.anchor === anchor) arm();
    }
  });
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, stderr, ms: performance.now() - started, anchors: seen })));
}

/**
 * Every key of the index as plain values (hashes and sets sorted), but two that are history, not content:
 * the time of the last run, and mergeepoch, how many times a rebuild of allhashes started or ended (a
 * killed purge's rerun starts one more; commits compare it, src/dedupe/mergeLease.ts).
 */
async function dump(redis: Redis): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  for (const key of (await redis.keys("*")).sort()) {
    if (key === "last_update_ts" || key === "mergeepoch") continue;
    const type = await redis.type(key);
    if (type === "hash") state[key] = Object.fromEntries(Object.entries(await redis.hgetall(key)).sort(([a], [b]) => a.localeCompare(b)));
    else if (type === "set") state[key] = (await redis.smembers(key)).sort();
    else if (type === "list") state[key] = await redis.lrange(key, 0, -1);
    else state[key] = await redis.get(key);
  }
  return state;
}

/** The index as raw DUMPs, to start several trials from the same state. */
async function snapshot(redis: Redis): Promise<Map<string, Buffer>> {
  const keys = await redis.keys("*");
  return new Map(await Promise.all(keys.map(async (key) => [key, (await redis.dumpBuffer(key))!] as [string, Buffer])));
}

async function restore(redis: Redis, saved: Map<string, Buffer>): Promise<void> {
  await redis.flushdb(); // our private test redis-server
  for (const [key, value] of saved) await redis.restore(key, 0, value);
}

/** What a killed run left unfinished: entries pending or queued, conservedSize not counted, a purge recorded. */
async function unfinishedWork(redis: Redis): Promise<string[]> {
  const [pending, queued, conserve, purging] = await Promise.all([redis.hlen("pending:q"), redis.llen("src:q"), redis.hlen("src:conserve"), redis.scard("purging")]);
  return Object.entries({ pending, queued, conserve, purging }).filter(([, n]) => n > 0).map(([what]) => what);
}

/**
 * One trial: 1-5 runs SIGKILLed at seeded points (an anchor of the clean run's log, then a delay within
 * how long the clean run took from there to `end`), then two reruns side by side, both exit 0.
 */
async function killTrial(seed: number, args: string[], clean: RunResult, anchors: string[], end: string): Promise<{ plan: KillPoint[]; killed: number; leftUnfinished: number }> {
  const random = prng(seed);
  const kills = 1 + Math.floor(random() * 5);
  const plan: KillPoint[] = [];
  let killed = 0;
  let leftUnfinished = 0;
  for (let i = 0; i < kills; i++) {
    const choices = [null, ...anchors.filter((a) => clean.anchors[a] !== undefined && a !== end)];
    const anchor = choices[Math.floor(random() * choices.length)]!;
    const window = clean.anchors[end]! - (anchor === null ? 0 : clean.anchors[anchor]!);
    const point = { anchor, delayMs: Math.round(random() * window) };
    plan.push(point);
    const run = await runIndexer(args, anchors, point);
    if (run.signal === "SIGKILL") killed += 1;
    if ((await unfinishedWork(target.client)).length) leftUnfinished += 1;
  }
  await rerunTwice(args, `seed ${seed}, kills ${JSON.stringify(plan)}`);
  return { plan, killed, leftUnfinished };
}

/** Two reruns side by side after the kills: both exit 0. */
async function rerunTwice(args: string[], label: string): Promise<void> {
  const reruns = await Promise.all([runIndexer(args, []), runIndexer(args, [])]);
  for (const rerun of reruns) expect(rerun.code, `${label}: ${rerun.stderr.slice(-1500)}`).toBe(0);
}

/**
 * The trial for when every seeded kill landed before the work or after it (a loaded machine's timing is not the
 * clean run's): one run SIGKILLed while held at a pause point inside the work (CRAWLER_TEST_PAUSE_AT), then the two
 * reruns. Returns what that kill left unfinished.
 */
async function pinnedTrial(args: string[], point: string): Promise<string[]> {
  const anchor = `test pause at ${point}`;
  const run = await runIndexer(args, [anchor], { anchor, delayMs: 0 }, { CRAWLER_TEST_PAUSE_AT: point, CRAWLER_TEST_PAUSE_MS: "30000" });
  expect(run.signal, run.stderr.slice(-1500)).toBe("SIGKILL");
  const left = await unfinishedWork(target.client);
  await rerunTwice(args, `killed at ${point}`);
  return left;
}

function resourceOf(file: string, crawlId: string) {
  const path = join(dir, file);
  return { name: file, path: file, hash: sha256(readFileSync(path)), size: statSync(path).size, crawlId };
}

/** Crawl the fixture site into collection `name`; its WACZ files are copied into `dir`, their names returned. */
async function crawl(name: string, redisUrl: string, extra: string[] = []): Promise<string[]> {
  const result = await runCli("crawl", ["--url", site.url + SEED_PATH, "--collection", name, "--cwd", dir, ...NO_BEHAVIORS, "--generateWACZ", "--redisDedupeUrl", redisUrl, ...extra]);
  if (result.code !== 0) throw new Error(result.stderr.slice(-1500));
  const folder = join(dir, "collections", name);
  const files = readdirSync(folder).filter((f) => f.endsWith(".wacz")).sort((a, b) => a.length - b.length || a.localeCompare(b));
  for (const file of files) copyFileSync(join(folder, file), join(dir, file));
  return files;
}

beforeAll(async () => {
  site = await startFixtureServer();
  live = await startTestRedis();
  target = await startTestRedis();
  const liveC = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "indexer-"));
  try {
    const [filesC] = await Promise.all([crawl("C", liveC.url, ["--rolloverSize", "6KB"]), crawl("A", live.url)]);
    await crawl("B", live.url);
    if (filesC!.length < 2) throw new Error(`C should roll over into several WACZ files, got ${filesC!.join(", ")}`);
    const kept = [resourceOf("A.wacz", "A"), resourceOf("B.wacz", "B")];
    // C's files first: C precedes A, whose payloads it holds too; B's revisits of them then resolve to C's.
    writeFileSync(join(dir, "full.json"), JSON.stringify({ resources: [...filesC!.map((f) => resourceOf(f, "C")), ...kept] }));
    writeFileSync(join(dir, "kept.json"), JSON.stringify({ resources: kept }));
    fullManifest = join(dir, "full.json");
    keptManifest = join(dir, "kept.json");
  } finally {
    await liveC.stop();
  }
}, 240_000);

afterAll(async () => {
  await site?.close();
  await live?.stop();
  await target?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await target.client.flushdb(); // our private test redis-server
});

describe("importing the crawler's own WACZ files", () => {
  it("a single WACZ reproduces the live index of that crawl", async () => {
    const result = await indexer(["--sourceUrl", wacz("A")]);
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    expect(await target.client.hgetall("h:A:counts")).toEqual(await live.client.hgetall("h:A:counts"));
    expect(await hashesAtSecondPrecision(target.client, "A")).toEqual(await hashesAtSecondPrecision(live.client, "A"));
    expect(await target.client.hgetall("allhashes")).toEqual(await live.client.hgetall("allhashes"));
    expect(await target.client.lrange("c:A:wacz", 0, -1)).toEqual(await live.client.lrange("c:A:wacz", 0, -1));
    expect(await target.client.smembers("allcrawls")).toEqual(["A"]);
    expect(await target.client.get("updateProgress")).toBe("1");
    expect(await target.client.get("last_update_ts")).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("a manifest of A and B reproduces exactly the counts the crawler wrote live", async () => {
    const result = await indexer(["--sourceUrl", manifest("ab.json", [resource("A"), resource("B")])]);
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    for (const key of ["h:A:counts", "h:B:counts"]) {
      expect(await target.client.hgetall(key), key).toEqual(await live.client.hgetall(key));
    }
    // The indexer also tracks removed crawls in allcounts (none here).
    expect(await target.client.hgetall("allcounts")).toEqual({ ...(await live.client.hgetall("allcounts")), removedCrawls: "0", removedCrawlSize: "0" });
    expect((await target.client.smembers("src:d")).sort()).toEqual(["A.wacz", "B.wacz"]);
    expect(await target.client.hget("src:info", "B.wacz")).toBe(JSON.stringify({ crawlId: "B", requires: ["A"] }));
  });

  it("a nested manifest imports the same as a flat one, and re-running imports nothing twice", async () => {
    manifest("inner.json", [resource("B")]);
    const outer = manifest("outer.json", [resource("A"), { path: "inner.json" }]);
    expect((await indexer(["--sourceUrl", outer])).code).toBe(0);
    const once = await indexState(target.client);
    expect(once["h:B:counts"]).toEqual(await live.client.hgetall("h:B:counts"));
    const again = await indexer(["--sourceUrl", outer]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('"newlyQueued":0');
    expect(await indexState(target.client)).toEqual(once);
    // The same WACZ under another path is the same resource: queued once.
    mkdirSync(join(dir, "copy"), { recursive: true });
    copyFileSync(wacz("A"), join(dir, "copy", "A.wacz"));
    const moved = manifest("moved.json", [{ ...resource("A"), path: "copy/A.wacz" }, resource("B")]);
    expect((await indexer(["--sourceUrl", moved])).stderr).toContain('"newlyQueued":0');
    expect(await indexState(target.client)).toEqual(once);
  });
});

describe("remote import over HTTP range requests", () => {
  it("reads only the zip directory, datapackage and indexes", async () => {
    const remoteDir = join(dir, "remote");
    mkdirSync(remoteDir, { recursive: true });
    const big = await writeSyntheticWacz({ dir: remoteDir, name: "remote.wacz", records: 300, seed: "remote", bigBodies: { count: 4, size: 2_000_000 } });
    writeFileSync(join(remoteDir, "m.json"), JSON.stringify({ resources: [{ name: "remote.wacz", path: "remote.wacz", crawlId: "R", hash: big.hash, size: big.size }] }));
    const server = await startRangeServer(remoteDir);
    try {
      const result = await indexer(["--sourceUrl", `${server.url}/m.json`]);
      expect(result.code, result.stderr.slice(-1500)).toBe(0);
      expect(await target.client.hlen("h:R")).toBe(304);
      expect(await target.client.hget("h:R:counts", "totalUrls")).toBe("304");
      const waczBytes = server.requests.filter((r) => r.path === "/remote.wacz");
      expect(waczBytes.every((r) => r.method === "HEAD" || r.range)).toBe(true);
      expect(server.bytesServed).toBeLessThan(big.size * 0.05);
    } finally {
      await server.close();
    }
  });
});

describe("interrupted and cooperating importers", () => {
  it("an importer killed halfway and run again ends with exactly the index of one clean run", async () => {
    const many = join(dir, "many");
    mkdirSync(many, { recursive: true });
    const resources = [];
    for (let i = 0; i < 6; i++) {
      const w = await writeSyntheticWacz({ dir: many, name: `w${i}.wacz`, records: 2500, seed: `s${i % 4}` });
      resources.push({ name: `w${i}.wacz`, path: `w${i}.wacz`, crawlId: `crawl${i % 3}`, hash: w.hash, size: w.size });
    }
    writeFileSync(join(many, "m.json"), JSON.stringify({ resources }));
    const source = join(many, "m.json");

    expect((await indexer(["--sourceUrl", source])).code).toBe(0);
    const clean = await indexState(target.client);
    await target.client.flushdb();

    await new Promise<void>((resolve) => {
      const child = spawn(process.execPath, ["dist/indexer/cli.js", "--redisDedupeUrl", target.url, "--sourceUrl", source], { stdio: ["ignore", "ignore", "pipe"] });
      child.stderr.on("data", (d: Buffer) => {
        if (d.toString().includes('"WACZ imported"')) child.kill("SIGKILL");
      });
      child.on("exit", () => resolve());
    });
    expect(Number(await target.client.scard("src:d"))).toBeLessThan(6);
    const rerun = await indexer(["--sourceUrl", source]);
    expect(rerun.code, rerun.stderr.slice(-1500)).toBe(0);
    await expectSameIndex(target.client, clean);

    // Two importers on one manifest cooperate: each WACZ imported once, and exactly the clean run's index,
    // allhashes and conservedSize included, whichever importer got to which WACZ first.
    await target.client.flushdb();
    const both = await Promise.all([indexer(["--sourceUrl", source]), indexer(["--sourceUrl", source])]);
    expect(both.map((r) => r.code)).toEqual([0, 0]);
    const importedBy = both.map((r) => r.stderr.split('"WACZ imported"').length - 1);
    expect(importedBy[0] + importedBy[1]).toBe(6);
    await expectSameIndex(target.client, clean);
  }, 180_000);
});

describe("an importer killed at every step boundary", () => {
  // In the order one run meets them; each run of the sequence is killed at the next one, then a run
  // without pauses must end with exactly the index of one clean run (nothing lost, nothing counted twice).
  const STEPS = [
    "indexer-registered", "indexer-enqueued", "indexer-taken", "indexer-wacz-registered",
    "indexer-hashes-written", "indexer-imported", "indexer-released",
  ];

  /** Start the indexer paused at `step`, SIGKILL it there (it must still be running: a crash is no kill). */
  async function killAt(source: string, step: string): Promise<void> {
    const child = spawn(process.execPath, ["dist/indexer/cli.js", "--redisDedupeUrl", target.url, "--sourceUrl", source], {
      stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, CRAWLER_TEST_PAUSE_AT: step, CRAWLER_TEST_PAUSE_MS: "60000" },
    });
    let stderr = "";
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    await new Promise<void>((resolve, reject) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes(`test pause at ${step}`)) resolve();
      });
      void exited.then(() => reject(new Error(`indexer exited before reaching ${step}: ${stderr.slice(-1500)}`)));
    });
    expect(child.exitCode, step).toBeNull();
    child.kill("SIGKILL");
    expect(await exited, step).toEqual({ code: null, signal: "SIGKILL" });
  }

  it("killed once at each step, in turn, then run again: the index is complete and exact", async () => {
    const source = manifest("killed.json", [resource("A"), resource("B")]);
    expect((await indexer(["--sourceUrl", source])).code).toBe(0);
    const clean = await indexState(target.client);
    await target.client.flushdb();

    for (const step of STEPS) await killAt(source, step);
    const rerun = await indexer(["--sourceUrl", source]);
    expect(rerun.code, rerun.stderr.slice(-1500)).toBe(0);
    expect((await target.client.smembers("src:d")).sort()).toEqual(["A.wacz", "B.wacz"]);
    await expectSameIndex(target.client, clean);
    expect(await target.client.get("updateProgress")).toBe("1");
  }, 300_000);
});

describe("removed crawls", () => {
  it("are counted and kept, then purged with --remove; dependents block the purge without --force", async () => {
    expect((await indexer(["--sourceUrl", manifest("ab2.json", [resource("A"), resource("B")])])).code).toBe(0);
    const withBoth = await indexState(target.client);

    // A leaves the manifest: it is counted as removed and kept.
    const onlyB = manifest("b.json", [resource("B")]);
    expect((await indexer(["--sourceUrl", onlyB])).code).toBe(0);
    const sizeA = Number(await target.client.hget("h:A:counts", "totalCrawlSize"));
    expect(await target.client.hmget("allcounts", "removedCrawls", "removedCrawlSize")).toEqual(["1", String(sizeA)]);
    expect(await target.client.sismember("allcrawls", "A")).toBe(1);

    // B depends on A: --remove refuses and changes nothing.
    const refused = await indexer(["--sourceUrl", onlyB, "--remove"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n").pop()).toBe(
      "indexer: not purging: WACZ files that stay depend on crawls being removed: B.wacz (needs A); use --force to purge anyway",
    );
    expect(await target.client.exists("h:A")).toBe(1);

    // Without dependents (B leaves instead), --remove purges and rebuilds the merged index from A alone.
    const onlyA = manifest("a.json", [resource("A")]);
    const purged = await indexer(["--sourceUrl", onlyA, "--remove"]);
    expect(purged.code, purged.stderr.slice(-1000)).toBe(0);
    expect(await target.client.exists("h:B", "h:B:counts", "c:B:wacz")).toBe(0);
    expect(await target.client.smembers("allcrawls")).toEqual(["A"]);
    const aCounts = await target.client.hgetall("h:A:counts");
    expect(await target.client.hgetall("allcounts")).toEqual({ ...aCounts, removedCrawls: "0", removedCrawlSize: "0" });
    expect(await target.client.hgetall("allhashes")).toEqual(withBoth["allhashes"]);

    // --force purges even with dependents.
    expect((await indexer(["--sourceUrl", manifest("ab3.json", [resource("A"), resource("B")])])).code).toBe(0);
    const forced = await indexer(["--sourceUrl", onlyB, "--remove", "--force"]);
    expect(forced.code).toBe(0);
    expect(await target.client.smembers("allcrawls")).toEqual(["B"]);
    expect(await target.client.exists("h:A")).toBe(0);
  });
});

describe("commit and cancel by hand", () => {
  it("--commitCrawlId commits once; --cancelCrawlId leaves no keys", async () => {
    await target.client.sadd("uncommittedcrawls", "X", "Y");
    await target.client.hset("h:X", "sha256:aa", "0 20260101000000 http://x/ 10");
    await target.client.hset("h:X:counts", "totalUrls", "1");
    await target.client.hset("h:Y", "sha256:bb", "0 20260101000000 http://y/ 10");
    await target.client.rpush("c:Y:wacz", '{"filename":"y.wacz"}');
    for (let i = 0; i < 2; i++) expect((await indexer(["--commitCrawlId", "X"])).code).toBe(0);
    expect(await target.client.hgetall("allcounts")).toEqual({ totalUrls: "1" });
    expect(await target.client.hget("allhashes", "sha256:aa")).toBe("X");
    expect((await indexer(["--cancelCrawlId", "Y"])).code).toBe(0);
    expect(await target.client.exists("h:Y", "c:Y:wacz")).toBe(0);
    expect(await target.client.smembers("uncommittedcrawls")).toEqual([]);
    const refused = await indexer(["--cancelCrawlId", "X"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("crawl X is committed");
  });
});

// Kill points: after one of these log lines, within how long the clean run took from there to the last one.
const IMPORT_ANCHORS = ['"import started"', '"WACZ imported"', '"import finished"'];
const PURGE_ANCHORS = ['"import started"', "no longer in the manifest", '"purged removed crawls"'];

describe("an import killed at random points", () => {
  it(`then run twice more leaves the clean run's index, key for key (${TRIALS} seeded trials from ${BASE_SEED})`, async () => {
    await target.client.flushdb();
    const clean = await runIndexer(["--sourceUrl", fullManifest], IMPORT_ANCHORS);
    expect(clean.code, clean.stderr.slice(-1500)).toBe(0);
    const cleanIndex = await dump(target.client);
    // What the comparison covers: conflicts between crawls, revisits that saved something.
    expect(Number((cleanIndex["h:B:counts"] as Record<string, string>)["conservedSize"])).toBeGreaterThan(0);
    expect(Number((cleanIndex["h:C:counts"] as Record<string, string>)["conservedSize"])).toBeGreaterThan(0);
    const holders = new Set(Object.values(cleanIndex["allhashes"] as Record<string, string>));
    expect([...holders].sort()).toEqual(["A", "B", "C"].filter((c) => holders.has(c)));
    expect(holders.has("C")).toBe(true);

    let killedRuns = 0;
    let unfinished = 0;
    let trial = 0;
    for (; moreTrials(trial, unfinished); trial++) {
      const seed = BASE_SEED + trial;
      await target.client.flushdb();
      const { plan, killed, leftUnfinished } = await killTrial(seed, ["--sourceUrl", fullManifest], clean, IMPORT_ANCHORS, '"import finished"');
      killedRuns += killed;
      unfinished += leftUnfinished;
      expect(await dump(target.client), `seed ${seed}, kills ${JSON.stringify(plan)}`).toEqual(cleanIndex);
    }
    console.log(`import kill trials: ${trial} from seed ${BASE_SEED}, ${killedRuns} runs killed, ${unfinished} left work unfinished`);
    if (unfinished === 0) {
      await target.client.flushdb();
      expect(await pinnedTrial(["--sourceUrl", fullManifest], "indexer-hashes-written")).not.toEqual([]);
      expect(await dump(target.client), "killed at indexer-hashes-written").toEqual(cleanIndex);
    }
  }, 300_000);
});

describe("a purge (--remove) killed at random points", () => {
  it(`is finished by the next runs, and the purged crawl can be imported again (${TRIALS} seeded trials from ${BASE_SEED})`, async () => {
    await target.client.flushdb();
    expect((await runIndexer(["--sourceUrl", fullManifest], [])).code).toBe(0);
    const imported = await dump(target.client);
    const beforePurge = await snapshot(target.client);
    const clean = await runIndexer(["--sourceUrl", keptManifest, "--remove"], PURGE_ANCHORS);
    expect(clean.code, clean.stderr.slice(-1500)).toBe(0);
    const cleanPurge = await dump(target.client);
    expect(cleanPurge["allcrawls"]).toEqual(["A", "B"]);
    expect(Object.keys(cleanPurge).filter((key) => key.includes("C"))).toEqual([]);

    let killedRuns = 0;
    let unfinished = 0;
    let trial = 0;
    for (; moreTrials(trial, unfinished); trial++) {
      const seed = BASE_SEED + 1000 + trial;
      await restore(target.client, beforePurge);
      const { plan, killed, leftUnfinished } = await killTrial(seed, ["--sourceUrl", keptManifest, "--remove"], clean, PURGE_ANCHORS, '"purged removed crawls"');
      killedRuns += killed;
      unfinished += leftUnfinished;
      expect(await dump(target.client), `seed ${seed}, kills ${JSON.stringify(plan)}`).toEqual(cleanPurge);
      // C comes back with the full manifest: imported again, as in the first import.
      const again = await runIndexer(["--sourceUrl", fullManifest], []);
      expect(again.code, again.stderr.slice(-1500)).toBe(0);
      expect(await dump(target.client), `seed ${seed}: C imported again`).toEqual(imported);
    }
    console.log(`purge kill trials: ${trial} from seed ${BASE_SEED + 1000}, ${killedRuns} runs killed, ${unfinished} left a purge or import unfinished`);
    if (unfinished === 0) {
      await restore(target.client, beforePurge);
      expect(await pinnedTrial(["--sourceUrl", keptManifest, "--remove"], "purge-recorded")).toContain("purging");
      expect(await dump(target.client), "killed at purge-recorded").toEqual(cleanPurge);
    }
  }, 300_000);
});
