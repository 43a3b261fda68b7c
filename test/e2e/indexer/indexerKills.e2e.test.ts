// Seeded kill trials of the indexer (issue 28, items 6 and 7): an import, or a purge (--remove), SIGKILLed
// 1 to 5 times at random points, then run twice more, must leave exactly the index of one clean run,
// key for key (allhashes, h:<crawl>, allcounts and conservedSize, WACZ lists, import records...).
// The WACZ files are real crawls of the fixture site: A, then B deduping against A (B's revisits need A),
// and C in an index of its own (its payloads are A's again: allhashes must pick one crawl, the same way
// every time), rolled over into several WACZ files (revisits within C across its own files).
// Replay one trial: INDEXER_KILL_SEED=<seed> INDEXER_KILL_TRIALS=1 INDEXER_KILL_MAX_TRIALS=1 npx vitest run test/indexerKills.e2e.test.ts
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { SEED_PATH } from "../../../fixtures/site-manifest.js";
import { runCli, NO_BEHAVIORS } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { sha256 } from "../../helpers/warcFile.js";
import { seededRandom as prng } from "../../helpers/seededRandom.js";

// A new base seed each run (so CI runs try many), printed in the test names and failure messages.
const BASE_SEED = Number(process.env.INDEXER_KILL_SEED ?? Math.floor(Math.random() * 1_000_000));
const TRIALS = Number(process.env.INDEXER_KILL_TRIALS ?? 3);
// A kill lands at a time measured on the clean run: on a loaded machine all of TRIALS can land after the work
// (a purge takes a few ms). More seeded trials follow then, up to this many, until one leaves work unfinished:
// the check that the trials exercise anything stays, without failing on where a scheduler put the kills.
const MAX_TRIALS = Math.max(TRIALS, Number(process.env.INDEXER_KILL_MAX_TRIALS ?? 10));

/** Trials to run: TRIALS, then more while none has left work unfinished (up to MAX_TRIALS). */
const moreTrials = (trial: number, unfinished: number) => trial < TRIALS || (unfinished === 0 && trial < MAX_TRIALS);

let site: FixtureServer;
let target: TestRedis;
let dir: string;
let fullManifest: string; // A, B, C's files
let keptManifest: string; // A and B: C is purged with --remove
const ROOT = join(import.meta.dirname, "../../..");


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
function runIndexer(args: string[], anchors: string[], kill?: KillPoint): Promise<RunResult> {
  const started = performance.now();
  const child = spawn(process.execPath, ["dist/indexer/cli.js", "--redisDedupeUrl", target.url, ...args], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
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
  const reruns = await Promise.all([runIndexer(args, []), runIndexer(args, [])]);
  for (const rerun of reruns) expect(rerun.code, `seed ${seed}, kills ${JSON.stringify(plan)}: ${rerun.stderr.slice(-1500)}`).toBe(0);
  return { plan, killed, leftUnfinished };
}

function resourceOf(file: string, crawlId: string) {
  const path = join(dir, file);
  return { name: file, path: file, hash: sha256(readFileSync(path)), size: statSync(path).size, crawlId };
}

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
  target = await startTestRedis();
  const [liveAB, liveC] = await Promise.all([startTestRedis(), startTestRedis()]);
  dir = mkdtempSync(join(tmpdir(), "indexer-kills-"));
  try {
    const [filesC] = await Promise.all([crawl("C", liveC.url, ["--rolloverSize", "6KB"]), crawl("A", liveAB.url)]);
    await crawl("B", liveAB.url);
    if (filesC!.length < 2) throw new Error(`C should roll over into several WACZ files, got ${filesC!.join(", ")}`);
    const kept = [resourceOf("A.wacz", "A"), resourceOf("B.wacz", "B")];
    // C's files first: C precedes A, whose payloads it holds too; B's revisits of them then resolve to C's.
    writeFileSync(join(dir, "full.json"), JSON.stringify({ resources: [...filesC!.map((f) => resourceOf(f, "C")), ...kept] }));
    writeFileSync(join(dir, "kept.json"), JSON.stringify({ resources: kept }));
    fullManifest = join(dir, "full.json");
    keptManifest = join(dir, "kept.json");
  } finally {
    await liveAB.stop();
    await liveC.stop();
  }
}, 240_000);

afterAll(async () => {
  await site?.close();
  await target?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
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
    expect(unfinished).toBeGreaterThan(0);
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
    expect(unfinished).toBeGreaterThan(0);
  }, 300_000);
});
