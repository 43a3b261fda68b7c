import type { Cluster, Redis } from "ioredis";
import { fingerprint, packEntry, type QueuedPage } from "./frontierEntry.js";
import { ADD_SEEN_LUA, PUSH_LUA } from "./frontierScripts.js";
import type { CrawlStateKeys, FrontierShardKeys } from "./stateKeys.js";

/** How long a process waits for another one moving an older build's frontier into the shards. */
const MIGRATION_WAIT_MS = 600_000;
const BATCH = 500;

/**
 * Settle the number of the crawl's frontier shards (the first process's choice stays for the crawl) and,
 * on a crawl an older build started (its `q` zset of JSON, `s` set of whole URLs), move that frontier into
 * the shards first, once, while the other processes wait for it.
 */
export async function openFrontier(redis: Redis | Cluster, keys: CrawlStateKeys, defaultShards: number): Promise<FrontierShardKeys[]> {
  const settled = async () => {
    const n = await redis.get(keys.frontierShards);
    return n === null ? null : Array.from({ length: Number(n) }, (_, i) => keys.frontierShard(i));
  };
  const known = await settled();
  if (known) return known;
  // Older builds never ran on a cluster: there is nothing to move there.
  const legacy = !redis.isCluster && (await (redis as Redis).exists(keys.legacyQueue, keys.legacySeen, keys.legacyDone, keys.legacyRetryDelayed, keys.legacyPending, keys.legacyFailed)) > 0;
  if (!legacy) {
    await redis.set(keys.frontierShards, String(Math.max(1, Math.floor(defaultShards))), "NX");
    return (await settled())!;
  }
  const lock = `${keys.frontierShards}:moving`;
  if ((await redis.set(lock, "1", "PX", MIGRATION_WAIT_MS, "NX")) === "OK") {
    await moveLegacyFrontier(redis as Redis, keys, keys.frontierShard(0));
    await redis.set(keys.frontierShards, "1");
    await redis.del(lock);
  }
  for (const started = Date.now(); Date.now() - started < MIGRATION_WAIT_MS; await new Promise((r) => setTimeout(r, 200))) {
    const shards = await settled();
    if (shards) return shards;
  }
  throw new Error("the crawl's frontier of an older build is still being moved by another process after 10 minutes");
}

/**
 * An older build's frontier into shard 0 of a plain Redis: seen keys become fingerprints, queue and
 * retry entries the compact form (the depth-major order kept), pages leased then go back to the queue
 * (their processes were of the older build: gone), finished/failed/listed pages keep their keys' contents.
 */
async function moveLegacyFrontier(redis: Redis, keys: CrawlStateKeys, shard: FrontierShardKeys): Promise<void> {
  const seenKeys = await redis.smembers(keys.legacySeen);
  for (let i = 0; i < seenKeys.length; i += BATCH) {
    const args = seenKeys.slice(i, i + BATCH).flatMap((key) => {
      const fp = fingerprint(key);
      return [fp.member, fp.bucket];
    });
    await redis.eval(ADD_SEEN_LUA, 1, shard.meta, shard.seenBucket, ...args);
  }
  await redis.set(keys.frontierQueuedEver, seenKeys.length);
  const queued = [...(await redis.zrange(keys.legacyQueue, 0, -1)), ...(await redis.hvals(keys.legacyPending))];
  const entries = queued.map((json) => packEntry(JSON.parse(json) as QueuedPage));
  for (let i = 0; i < entries.length; i += BATCH) await redis.eval(PUSH_LUA, 2, shard.meta, shard.depths, shard.queueAtDepth, ...entries.slice(i, i + BATCH));
  const delayed = await redis.zrange(keys.legacyRetryDelayed, 0, -1, "WITHSCORES");
  for (let i = 0; i < delayed.length; i += 2) await redis.zadd(shard.delayed, delayed[i + 1]!, packEntry(JSON.parse(delayed[i]!) as QueuedPage));
  const [attempts, rateLimited] = await Promise.all([redis.get(keys.legacyFailedAttempts), redis.get(keys.legacyRateLimited)]);
  await redis.hset(shard.meta, "fa", Number(attempts ?? 0), "rl", Number(rateLimited ?? 0));
  const renames: [string, string][] = [
    [keys.legacyDone, shard.done], [keys.legacyListedPages, shard.listedPages], [keys.legacySkippedPages, shard.skippedPages],
    [keys.legacyFailed, shard.failed], [keys.legacyRetries, shard.retries], [keys.legacyRateLimitRetries, shard.rateLimitRetries],
  ];
  for (const [from, to] of renames) if (await redis.exists(from)) await redis.rename(from, to);
  await redis.del(keys.legacyQueue, keys.legacyQueueSeq, keys.legacySeen, keys.legacyPending, keys.legacyLeases, keys.legacyRetryDelayed, keys.legacyFailedAttempts, keys.legacyRateLimited);
}

/** Every key of the crawl's frontier (to replace it with a loaded state): found with SCAN on each node. */
export async function frontierKeyNames(redis: Redis | Cluster, shards: FrontierShardKeys[]): Promise<string[]> {
  const nodes = redis.isCluster ? (redis as Cluster).nodes("master") : [redis as Redis];
  const names: string[] = [];
  for (const node of nodes) {
    for (const shard of shards) {
      const pattern = shard.prefix.replace(/[*?[\]\\]/g, "\\$&") + ":*";
      let cursor = "0";
      do {
        const [next, found] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        cursor = next;
        names.push(...found);
      } while (cursor !== "0");
    }
  }
  return names;
}

/** What the frontier holds, for a --saveState file: entries queued (lists, then delayed), leased, failed (JSON), finished URLs. */
export interface FrontierContents {
  queued: string[];
  pending: string[];
  failed: string[];
  /** URLs crawled, or taken and not crawled (markSkipped). */
  finished: string[];
  /** url -> failed attempts so far. */
  retries: Record<string, string>;
}

export async function exportFrontier(redis: Redis | Cluster, shards: FrontierShardKeys[]): Promise<FrontierContents> {
  const contents: FrontierContents = { queued: [], pending: [], failed: [], finished: [], retries: {} };
  for (const shard of shards) {
    for (const depth of await redis.zrange(shard.depths, 0, -1)) contents.queued.push(...(await redis.lrange(shard.queueAtDepth + depth, 0, -1)));
    contents.queued.push(...(await redis.zrange(shard.delayed, 0, -1)));
    contents.pending.push(...(await redis.hvals(shard.pending)));
    contents.failed.push(...(await redis.lrange(shard.failed, 0, -1)));
    contents.finished.push(...(await redis.smembers(shard.done)), ...(await redis.hkeys(shard.skippedPages)));
    Object.assign(contents.retries, await redis.hgetall(shard.retries));
  }
  return contents;
}
