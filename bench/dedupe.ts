/**
 * Dedupe-index benchmark: commit of a crawl with N hashes (default 1,000,000) into a private local
 * redis-server, and the per-record lookup cost. Prints JSON.
 *   node dist/bench/dedupe.js [--hashes 1000000] [--lookups 20000]
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { commitCrawl } from "../src/dedupe/commit.js";
import { DedupeIndex } from "../src/dedupe/dedupeIndex.js";
import { dedupeKeys, formatHashEntry } from "../src/dedupe/indexKeys.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";

const { values } = parseArgs({ options: { hashes: { type: "string", default: "1000000" }, lookups: { type: "string", default: "20000" } } });
const hashes = Number(values.hashes);
const lookups = Number(values.lookups);
const digest = (i: number) => "sha256:" + createHash("sha256").update(String(i)).digest("hex");

const dir = mkdtempSync(join(tmpdir(), "bench-dedupe-"));
const server = new EmbeddedRedis({ dataDir: dir, persist: false });
const redis = new Redis(await server.start());
try {
  const fillStarted = performance.now();
  for (let start = 0; start < hashes; start += 10_000) {
    const pipeline = redis.pipeline();
    for (let chunk = start; chunk < Math.min(start + 10_000, hashes); chunk += 1000) {
      const args: string[] = [];
      for (let i = chunk; i < Math.min(chunk + 1000, hashes); i++) {
        args.push(digest(i), formatHashEntry({ waczIndex: 0, date: "20260102030405678", url: `https://example.com/resource/${i}.png`, size: 2000 + (i % 5000) }));
      }
      pipeline.hset(dedupeKeys.crawlHashes("bench"), ...args);
    }
    await pipeline.exec();
  }
  const fillSeconds = (performance.now() - fillStarted) / 1000;
  await redis.hset(dedupeKeys.crawlCounts("bench"), "totalUrls", hashes);

  const commit = await commitCrawl(redis, "bench");
  const merged = await redis.hlen(dedupeKeys.allHashes);

  const index = new DedupeIndex(redis, "other-crawl");
  let found = 0;
  const sequentialStarted = performance.now();
  for (let i = 0; i < lookups; i++) if (await index.lookup(digest((i * 7919) % hashes))) found++;
  const sequentialSeconds = (performance.now() - sequentialStarted) / 1000;
  const concurrentStarted = performance.now();
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = w; i < lookups; i += 16) if (await index.lookup(digest(hashes + i))) found++; // misses: the common case
  }));
  const concurrentSeconds = (performance.now() - concurrentStarted) / 1000;

  console.log(JSON.stringify({
    benchmark: "dedupe",
    hashes,
    mergedIntoAllhashes: merged,
    fillSeconds: round(fillSeconds),
    commitSeconds: round(commit.seconds),
    commitHashesPerSecond: Math.round(hashes / commit.seconds),
    lookups,
    lookupHits: found,
    lookupMicrosSequential: round((sequentialSeconds / lookups) * 1e6),
    lookupsPerSecond16Concurrent: Math.round(lookups / concurrentSeconds),
    redisUsedMemoryMB: round(Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]) / 1e6),
  }));
} finally {
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
