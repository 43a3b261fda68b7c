// The dedupe index on a real 3-node Redis Cluster: crawls dedupe across each other through it, and the
// indexer's import, purge (and its refusal to orphan dependents), commit and cancel leave exactly what
// they leave on a single node, read back in single-node names (helpers/dedupeCluster.ts).
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { SEED_PATH } from "../../../fixtures/site-manifest.js";
import { startLocalCluster, type LocalCluster } from "../../../bench/lib/localCluster.js";
import { connectDedupeIndex } from "../../../src/dedupe/connectIndex.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { layoutOf, type DedupeRedis } from "../../../src/dedupe/indexLayout.js";
import { readShardedHash, writeEntriesSharded } from "../../../src/dedupe/shardedHashes.js";
import { runCli, NO_BEHAVIORS } from "../../helpers/cli.js";
import { resetCluster, singleLayoutView } from "../../helpers/dedupeCluster.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { sha256 } from "../../helpers/warcFile.js";

// 256 shards: few enough that every whole-crawl step (one call per slot holding a shard) is quick on a
// loaded machine, many enough to spread over all three nodes.
const PREFIX_DIGITS = 2;

let site: FixtureServer;
let cluster: LocalCluster;
let index: DedupeRedis; // a cluster client, as the crawler and indexer open it
let single: TestRedis;
let dir: string;

const wacz = (name: string) => join(dir, `${name}.wacz`);
const resource = (name: string) => ({ name: `${name}.wacz`, path: `${name}.wacz`, hash: sha256(readFileSync(wacz(name))), size: statSync(wacz(name)).size, crawlId: name });
function manifest(file: string, names: string[]): string {
  writeFileSync(join(dir, file), JSON.stringify({ profile: "multi-wacz-package", resources: names.map(resource) }));
  return join(dir, file);
}
const indexerOn = (url: string, args: string[]) => runCli("indexer", ["--redisDedupeUrl", url, ...args]);

/** Run the same indexer arguments on the single node and on the cluster; both must end alike. */
async function onBoth(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const [one, many] = await Promise.all([indexerOn(single.url, args), indexerOn(cluster.url, args)]);
  expect(many.code, many.stderr.slice(-1500)).toBe(one.code);
  // The one-line outcome (not the JSON log, which has times in it).
  const outcome = (stderr: string, url: string) => stderr.split("\n").filter((line) => line.startsWith("indexer:")).map((line) => line.replaceAll(url, "URL"));
  expect(outcome(many.stderr, cluster.url)).toEqual(outcome(one.stderr, single.url));
  return many;
}

async function expectSameIndex(redis: DedupeRedis = index): Promise<Record<string, unknown>> {
  const [expected, actual] = await Promise.all([singleLayoutView(single.client), singleLayoutView(redis)]);
  expect(actual).toEqual(expected);
  return actual;
}

beforeAll(async () => {
  site = await startFixtureServer();
  cluster = await startLocalCluster(3);
  single = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "dedupe-cluster-"));
  index = await connectDedupeIndex(cluster.url, "test cluster");
  await resetCluster(index as Cluster, PREFIX_DIGITS);
}, 120_000);

afterAll(async () => {
  index?.disconnect();
  await site?.close();
  await single?.stop();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the dedupe index on a 3-node Redis Cluster", () => {
  it("is found from any node's URL, sharded, its keys spread over every node", async () => {
    expect(layoutOf(index)).toEqual({ kind: "sharded", prefixDigits: PREFIX_DIGITS });
    const other = await connectDedupeIndex(`redis://127.0.0.1:${cluster.ports[2]}`, "test cluster");
    expect(other).toBeInstanceOf(Cluster);
    expect(layoutOf(other)).toEqual(layoutOf(index));
    other.disconnect();
  });

  it("two crawls: B's repeated payloads are revisits of A's, through the cluster", async () => {
    // The first pages of the fixture site are enough for what the cluster changes (where keys live): with one
    // worker, both crawls take the same pages in the same order.
    for (const name of ["A", "B"]) {
      const result = await runCli("crawl", ["--url", site.url + SEED_PATH, "--collection", name, "--crawlId", name, "--cwd", dir, ...NO_BEHAVIORS, "--generateWACZ",
        "--redisDedupeUrl", cluster.url, "--workers", "1", "--limit", "5"]);
      expect(result.code, result.stderr.slice(-1500)).toBe(0);
      copyFileSync(join(dir, "collections", name, `${name}.wacz`), wacz(name));
    }
    const view = await singleLayoutView(index);
    expect(view["allcrawls"]).toEqual(["A", "B"]);
    expect(view["uncommittedcrawls"]).toBeUndefined();
    const hashesA = Object.keys(view["h:A"] as object);
    const hashesB = Object.keys((view["h:B"] ?? {}) as object);
    const countsB = view["h:B:counts"] as Record<string, string>;
    // B repeats A's static payloads: revisits (only the site's dynamic responses are new in B).
    expect(Number(countsB["dupeUrls"])).toBeGreaterThan(3);
    expect(Number(countsB["dupeUrls"]) + hashesB.length).toBeGreaterThanOrEqual(hashesA.length);
    const allhashes = view["allhashes"] as Record<string, string>;
    expect(Object.keys(allhashes).sort()).toEqual([...new Set([...hashesA, ...hashesB])].sort());
    for (const digest of hashesA) expect(allhashes[digest], digest).toBe("A");
    // A lookup from a third crawl finds A's original in its packaged WACZ.
    const lookup = await new DedupeIndex(index, "C").lookup(hashesA[0]!);
    expect(lookup).toMatchObject({ crawlId: "A", waczFilename: "A.wacz", waczFinished: true });
  }, 300_000);

  it("the indexer's import of A and B leaves the same index as on one node", async () => {
    await resetCluster(index as Cluster, PREFIX_DIGITS);
    await onBoth(["--sourceUrl", manifest("ab.json", ["A", "B"])]);
    const view = await expectSameIndex();
    expect(view["allcrawls"]).toEqual(["A", "B"]);
    expect(Object.keys(view["h:A"] as object).length).toBeGreaterThan(3);
  }, 120_000);

  it("purge: refused while B depends on A, then done without dependents and with --force, as on one node", async () => {
    const onlyB = manifest("b.json", ["B"]);
    expect((await onBoth(["--sourceUrl", onlyB])).code).toBe(0);
    await expectSameIndex();
    const refused = await onBoth(["--sourceUrl", onlyB, "--remove"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("not purging: WACZ files that stay depend on crawls being removed: B.wacz (needs A)");
    expect((await singleLayoutView(index))["h:A"]).toBeDefined();
    await expectSameIndex();

    expect((await onBoth(["--sourceUrl", manifest("a.json", ["A"]), "--remove"])).code).toBe(0);
    const purged = await expectSameIndex();
    expect(purged["allcrawls"]).toEqual(["A"]);
    expect(purged["h:B:counts"]).toBeUndefined();

    expect((await onBoth(["--sourceUrl", manifest("ab2.json", ["A", "B"])])).code).toBe(0);
    expect((await onBoth(["--sourceUrl", onlyB, "--remove", "--force"])).code).toBe(0);
    const forced = await expectSameIndex();
    expect(forced["allcrawls"]).toEqual(["B"]);
    expect(forced["h:A"]).toBeUndefined();
  }, 300_000);

  it("commit and cancel by hand end as on one node", async () => {
    const digestX = "sha256:" + "aa".repeat(32);
    const digestY = "sha256:" + "bb".repeat(32);
    for (const redis of [single.client, index]) {
      const x = new DedupeIndex(redis, "X");
      const y = new DedupeIndex(redis, "Y");
      await x.registerCrawl();
      await y.registerCrawl();
      await x.addOriginal(digestX, { waczIndex: 0, date: "20260101000000", url: "http://x/", size: 10 });
      await x.addCounts({ totalUrls: 1 });
      await y.addOriginal(digestY, { waczIndex: 0, date: "20260101000000", url: "http://y/", size: 10 });
      await y.registerWacz("y.wacz");
    }
    for (let i = 0; i < 2; i++) expect((await onBoth(["--commitCrawlId", "X"])).code).toBe(0);
    expect((await onBoth(["--cancelCrawlId", "Y"])).code).toBe(0);
    const view = await expectSameIndex();
    expect((view["allhashes"] as Record<string, string>)[digestX]).toBe("X");
    expect(view["h:Y"]).toBeUndefined();
    expect((await onBoth(["--cancelCrawlId", "X"])).stderr).toContain("crawl X is committed");
  }, 120_000);

  it("a batch write with a wrong slot map (slots moved since): the entries go again slot by slot, all of them", async () => {
    await resetCluster(index as Cluster, PREFIX_DIGITS);
    const stale = (await connectDedupeIndex(cluster.url, "test cluster")) as Cluster;
    try {
      const layout = layoutOf(stale);
      if (layout.kind !== "sharded") throw new Error("not sharded");
      // This client believes the first node serves every slot: the batch's one script call there refuses
      // the other nodes' keys, and the per-slot calls that follow are redirected (MOVED) to their nodes.
      const first = `127.0.0.1:${cluster.ports[0]}`;
      expect(stale.nodes("master").map((node) => `${node.options.host}:${node.options.port}`)).toContain(first);
      for (let slot = 0; slot < 16384; slot++) stale.slots[slot] = [first];
      const entries = Array.from({ length: 300 }, (_, i) => ({ digest: sha256(Buffer.from(`payload ${i}`)), value: `${i % 2} 20260102030405${i} https://w.test/${i} ${i}` }));
      await writeEntriesSharded(stale, layout, "W", entries);
      expect(await readShardedHash(index, layout, "W")).toEqual(Object.fromEntries(entries.map(({ digest, value }) => [digest, value])));
      expect(await readShardedHash(index, layout, null)).toEqual(Object.fromEntries(entries.map(({ digest }) => [digest, "W"])));
      // The entries are on every node, not only on the first.
      for (const node of (index as Cluster).nodes("master")) expect((await node.keys("*h:W")).length).toBeGreaterThan(0);
    } finally {
      stale.disconnect();
    }
  }, 120_000);

  it("a node restarted in the middle of an import: the import finishes with the same index as on one node", async () => {
    await resetCluster(index as Cluster, PREFIX_DIGITS);
    await single.client.flushall();
    const source = manifest("ab3.json", ["A", "B"]);
    expect((await indexerOn(single.url, ["--sourceUrl", source])).code).toBe(0);
    // Paused after registering each WACZ, before its hashes are written: a node goes down and comes back
    // there (its append-only file keeps what it held); the importer's connection to it is re-made.
    const child = spawn(process.execPath, ["dist/indexer/cli.js", "--redisDedupeUrl", cluster.url, "--sourceUrl", source], {
      cwd: join(import.meta.dirname, "../../.."),
      env: { ...process.env, CRAWLER_TEST_PAUSE_AT: "indexer-wacz-registered", CRAWLER_TEST_PAUSE_MS: "6000" },
    });
    let stderr = "";
    let restarted: Promise<void> | null = null;
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (!restarted && stderr.includes("test pause at indexer-wacz-registered")) restarted = cluster.restartNode(1, 300);
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(restarted).not.toBeNull();
    await restarted;
    expect(code, stderr.slice(-1500)).toBe(0);
    // Read back through a new connection: this one's list of nodes may not have the restarted node yet.
    const fresh = await connectDedupeIndex(cluster.url, "test cluster");
    try {
      await expectSameIndex(fresh);
    } finally {
      fresh.disconnect();
    }
  }, 180_000);

  it("a cluster missing a slot is refused at connect with one line saying so", async () => {
    const node = new Redis(cluster.ports[0]!, "127.0.0.1");
    try {
      const slot = Number(await node.call("CLUSTER", "KEYSLOT", "x"));
      const owner = await findOwner(slot);
      // The owner gives the slot up: in its own view the cluster now misses it.
      await owner.call("CLUSTER", "DELSLOTS", slot);
      const ownerUrl = `redis://127.0.0.1:${owner.options.port}`;
      try {
        const refused = await indexerOn(ownerUrl, ["--commitCrawlId", "X"]);
        expect(refused.code).toBe(1);
        expect(refused.stderr.trim()).toBe(
          `indexer: dedupe Redis (--redisDedupeUrl) at ${ownerUrl} is a Redis Cluster node, but the cluster is not serving every slot ` +
            "(cluster_state:fail, 16383 of 16384 slots assigned, 16383 ok): assign the missing slots or bring the failed nodes back (redis-cli --cluster check/fix)",
        );
      } finally {
        await owner.call("CLUSTER", "ADDSLOTS", slot);
        owner.disconnect();
      }
    } finally {
      node.disconnect();
    }
  }, 60_000);
});

/** A plain connection to the node serving a slot. */
async function findOwner(slot: number): Promise<Redis> {
  for (const port of cluster.ports) {
    const node = new Redis(port, "127.0.0.1");
    const ranges = (await node.call("CLUSTER", "SLOTS")) as [number, number, [string, number, string]][];
    const mine = (await node.call("CLUSTER", "MYID")) as string;
    if (ranges.some(([from, to, master]) => slot >= from && slot <= to && master[2] === mine)) return node;
    node.disconnect();
  }
  throw new Error(`no node serves slot ${slot}`);
}
