/**
 * Dedupe index at scale, in its three setups: one node with today's layout, one node with the sharded
 * layout, and a local 3-node Redis Cluster (sharded). For each: import of N hashes through the index's
 * write path (hashes/s, bytes per hash from INFO memory used_memory before and after, summed over the
 * nodes; the importer's peak RSS), then crawl-time lookups (p50, p99 one at a time; lookups/s with 16
 * concurrent). One JSON line per setup.
 *   node dist/bench/dedupeCluster.js [--hashes 1000000] [--lookups 20000] [--setups single,sharded,cluster] [--prefixDigits 4]
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Cluster, Redis } from "ioredis";
import { commitCrawl } from "../src/dedupe/commit.js";
import { connectDedupeIndex } from "../src/dedupe/connectIndex.js";
import { DedupeIndex } from "../src/dedupe/dedupeIndex.js";
import { dedupeKeys, formatHashEntry, LAYOUT_KEY, shardedLayoutRecord, type HashEntry } from "../src/dedupe/indexKeys.js";
import { createShardedLayout, keysOf, layoutOf, type DedupeRedis } from "../src/dedupe/indexLayout.js";
import { writeEntriesSharded } from "../src/dedupe/shardedHashes.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { LISTPACK_SETTINGS, startLocalCluster } from "./lib/localCluster.js";

const { values } = parseArgs({ options: {
  hashes: { type: "string", default: "1000000" },
  lookups: { type: "string", default: "20000" },
  setups: { type: "string", default: "single,sharded,cluster" },
  // Shards of the sharded layout: pick so that hashes per shard match the index size being modelled.
  prefixDigits: { type: "string", default: "4" },
} });
const hashes = Number(values.hashes);
const lookups = Number(values.lookups);
const BATCH = 20_000;
const prefixDigits = Number(values.prefixDigits);
const IN_FLIGHT = 4;

// The same synthetic entries as bench/dedupe.ts (whose figures the issue quotes: 336 bytes per hash).
const digest = (i: number) => "sha256:" + createHash("sha256").update(String(i)).digest("hex");
const entry = (i: number): HashEntry => ({ waczIndex: 0, date: "20260102030405678", url: `https://example.com/resource/${i}.png`, size: 2000 + (i % 5000) });

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);

function nodesOf(redis: DedupeRedis): Redis[] {
  return redis instanceof Cluster ? redis.nodes("master") : [redis];
}
async function usedMemory(redis: DedupeRedis): Promise<number> {
  let total = 0;
  for (const node of nodesOf(redis)) total += Number(/used_memory:(\d+)/.exec(await node.info("memory"))![1]);
  return total;
}

/** Import: the sharded layout through the indexer's batch write; today's layout as the crawler does it (h:<crawl>, then commit). */
async function importHashes(redis: DedupeRedis): Promise<number> {
  const layout = layoutOf(redis);
  const started = performance.now();
  const inFlight = new Set<Promise<unknown>>();
  for (let start = 0; start < hashes; start += BATCH) {
    const end = Math.min(start + BATCH, hashes);
    let sent: Promise<unknown>;
    if (layout.kind === "sharded") {
      const entries = [];
      for (let i = start; i < end; i++) entries.push({ digest: digest(i), value: formatHashEntry(entry(i)) });
      sent = writeEntriesSharded(redis, layout, "bench", entries);
    } else {
      const args: string[] = [];
      for (let i = start; i < end; i++) args.push(digest(i), formatHashEntry(entry(i)));
      sent = redis.hset(dedupeKeys.crawlHashes("bench"), ...args);
    }
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
    while (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await redis.sadd(keysOf(redis).uncommittedCrawls, "bench");
  // Today's layout fills allhashes at commit; the sharded import wrote it already (the commit then only finds it there).
  await commitCrawl(redis, "bench");
  return (performance.now() - started) / 1000;
}

async function measureLookups(redis: DedupeRedis): Promise<Record<string, number>> {
  const index = new DedupeIndex(redis, "other-crawl");
  await index.registerCrawl();
  const times: number[] = [];
  let hits = 0;
  for (let i = 0; i < lookups; i++) {
    const started = performance.now();
    // Half hits (spread over the index), half misses (new payloads: the common case in a crawl).
    const found = await index.lookup(digest(i % 2 ? hashes + i : (i * 7919) % hashes));
    times.push(performance.now() - started);
    if (found) hits++;
  }
  times.sort((a, b) => a - b);
  const concurrentStarted = performance.now();
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = w; i < lookups; i += 16) await index.lookup(digest(i % 2 ? hashes + i : (i * 7919) % hashes));
  }));
  const concurrentSeconds = (performance.now() - concurrentStarted) / 1000;
  return {
    lookupHits: hits,
    lookupP50Micros: Math.round(times[Math.floor(times.length * 0.5)]! * 1000),
    lookupP99Micros: Math.round(times[Math.floor(times.length * 0.99)]! * 1000),
    lookupsPerSecond16Concurrent: Math.round(lookups / concurrentSeconds),
  };
}

async function run(setup: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bench-dedupe-cluster-"));
  let server: EmbeddedRedis | null = null;
  let cluster: Awaited<ReturnType<typeof startLocalCluster>> | null = null;
  let redis: DedupeRedis;
  if (setup === "cluster") {
    // No append-only file: the one-node setups persist nothing either (the figures compare the index, not fsync).
    cluster = await startLocalCluster(3, ["--appendonly", "no"]);
    const probe = await connectDedupeIndex(cluster.url, "bench cluster");
    await probe.set(LAYOUT_KEY, shardedLayoutRecord(prefixDigits));
    probe.disconnect();
    redis = await connectDedupeIndex(cluster.url, "bench cluster");
  } else {
    server = new EmbeddedRedis({ dataDir: dir, persist: false });
    const plain = new Redis(await server.start());
    // The settings the cluster nodes run with (docs/user-guide/scaling.md); today's layout is not affected by them.
    for (let i = 0; i < LISTPACK_SETTINGS.length; i += 2) await plain.config("SET", LISTPACK_SETTINGS[i]!.slice(2), LISTPACK_SETTINGS[i + 1]!);
    if (setup === "sharded") await createShardedLayout(plain, prefixDigits);
    redis = plain;
  }
  try {
    peakRss = process.memoryUsage().rss;
    const before = await usedMemory(redis);
    const seconds = await importHashes(redis);
    const after = await usedMemory(redis);
    const importerPeakRssMB = Math.round(peakRss / 1e5) / 10;
    const lookupFigures = await measureLookups(redis);
    console.log(JSON.stringify({
      benchmark: "dedupeCluster",
      setup: setup === "single" ? "1 node, single-node layout" : setup === "sharded" ? "1 node, sharded layout" : "3-node cluster, sharded layout",
      layout: layoutOf(redis),
      hashes,
      importSeconds: Math.round(seconds * 10) / 10,
      importHashesPerSecond: Math.round(hashes / seconds),
      bytesPerHash: Math.round((after - before) / hashes),
      usedMemoryMB: Math.round(after / 1e5) / 10,
      importerPeakRssMB,
      lookups,
      ...lookupFigures,
    }));
  } finally {
    redis.disconnect();
    await server?.stop();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  for (const setup of values.setups.split(",")) await run(setup);
} finally {
  clearInterval(sampler);
}
