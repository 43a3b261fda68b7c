import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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

let site: FixtureServer;
let live: TestRedis; // the index the crawler wrote while crawling
let target: TestRedis; // the index the indexer builds
let dir: string;

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

beforeAll(async () => {
  site = await startFixtureServer();
  live = await startTestRedis();
  target = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "indexer-"));
  for (const name of ["A", "B"]) {
    const result = await runCli("crawl", ["--url", site.url + SEED_PATH, "--collection", name, "--cwd", dir, ...NO_BEHAVIORS, "--generateWACZ", "--redisDedupeUrl", live.url]);
    if (result.code !== 0) throw new Error(result.stderr.slice(-1500));
    copyFileSync(join(dir, "collections", name, `${name}.wacz`), wacz(name));
  }
}, 180_000);

afterAll(async () => {
  await site.close();
  await live.stop();
  await target.stop();
  rmSync(dir, { recursive: true, force: true });
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
