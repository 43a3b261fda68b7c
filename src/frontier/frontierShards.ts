import { randomBytes } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { fingerprint, packEntry, type QueuedPage } from "./frontierEntry.js";
import { ADD_SEEN_LUA, PUSH_LUA } from "./frontierScripts.js";
import type { CrawlStateKeys, FrontierShardKeys } from "../state/stateKeys.js";

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

/** How long a snapshot's hold lasts unless renewed (a process that died while reading holds nothing for long). */
const HOLD_MS = 30_000;
const HOLD_RENEW_MS = 5_000;
/** Entries read per command: a large frontier is read in pieces, never as one reply. */
const READ_BATCH = 10_000;

const RENEW_HOLD_LUA = `
-- KEYS: hold; ARGV: token, ms. 1 while the hold is still ours.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;
const RELEASE_HOLD_LUA = `
-- KEYS: hold; ARGV: token
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

/**
 * The frontier as of one moment, read while workers go on crawling. Every shard is held first (no page is
 * taken from it: TAKE_LUA); from then on until the hold is released, pages are leased only by fewer and fewer
 * (only a take leases one), only a leased page settles (done, skipped, failed, back to a list or the delayed
 * set) or queues links, and the lists, the delayed set and the done, skipped and failed pages only grow (only
 * a take removes from the first two). The leased pages of every shard are read first (P), then the rest, in
 * pieces. Why nothing is missed:
 * - a page leased when the rest began to be read was leased all through the read of P, so it is in P: saved
 *   as pending, whatever it does later (links queued into a shard already read, a move to the delayed set)
 *   is done again when the file is resumed;
 * - a page absent from where it is now got there after that place was read, so from a page leased then: in P;
 * - a page read as finished and not in P had settled before the rest was read (it could not be leased again),
 *   so the links it queued were there before, and each was read where it was (nothing leaves a list or a
 *   set but by a take).
 * Read shard by shard without the hold, a retry moving from the delayed set into a list, or a link queued into
 * a shard already read by a page that finished in a shard read after, could be lost.
 */
export async function exportFrontier(redis: Redis | Cluster, shards: FrontierShardKeys[]): Promise<FrontierContents> {
  const token = randomBytes(12).toString("hex");
  let lost = false;
  const holdAll = async () => {
    for (const shard of shards) {
      if ((await redis.eval(RENEW_HOLD_LUA, 1, shard.snapshotHold, token, HOLD_MS)) !== 1) lost = true;
    }
  };
  for (const shard of shards) await redis.set(shard.snapshotHold, token, "PX", HOLD_MS);
  const renewal = setInterval(() => void holdAll().catch(() => (lost = true)), HOLD_RENEW_MS);
  try {
    const contents: FrontierContents = { queued: [], pending: [], failed: [], finished: [], retries: {} };
    for (const shard of shards) contents.pending.push(...Object.values(await hashEntries(redis, shard.pending)));
    for (const shard of shards) {
      for (const depth of await redis.zrange(shard.depths, 0, -1)) contents.queued.push(...(await listEntries(redis, shard.queueAtDepth + depth)));
      for (let at = 0; ; at += READ_BATCH) {
        const some = await redis.zrange(shard.delayed, at, at + READ_BATCH - 1);
        contents.queued.push(...some);
        if (some.length < READ_BATCH) break;
      }
      contents.failed.push(...(await listEntries(redis, shard.failed)));
      contents.finished.push(...(await setMembers(redis, shard.done)), ...Object.keys(await hashEntries(redis, shard.skippedPages)));
      Object.assign(contents.retries, await hashEntries(redis, shard.retries));
    }
    await holdAll();
    if (lost) throw new Error("the frontier took too long to read (its hold expired): not saved this time");
    return contents;
  } finally {
    clearInterval(renewal);
    for (const shard of shards) await redis.eval(RELEASE_HOLD_LUA, 1, shard.snapshotHold, token).catch(() => undefined);
  }
}

async function listEntries(redis: Redis | Cluster, key: string): Promise<string[]> {
  const all: string[] = [];
  for (let at = 0; ; at += READ_BATCH) {
    const some = await redis.lrange(key, at, at + READ_BATCH - 1);
    all.push(...some);
    if (some.length < READ_BATCH) return all;
  }
}

async function setMembers(redis: Redis | Cluster, key: string): Promise<string[]> {
  const all: string[] = [];
  let cursor = "0";
  do {
    const [next, some] = await redis.sscan(key, cursor, "COUNT", READ_BATCH);
    cursor = next;
    all.push(...some);
  } while (cursor !== "0");
  return [...new Set(all)];
}

async function hashEntries(redis: Redis | Cluster, key: string): Promise<Record<string, string>> {
  const all: Record<string, string> = {};
  let cursor = "0";
  do {
    const [next, some] = await redis.hscan(key, cursor, "COUNT", READ_BATCH);
    cursor = next;
    for (let i = 0; i + 1 < some.length; i += 2) all[some[i]!] = some[i + 1]!;
  } while (cursor !== "0");
  return all;
}
