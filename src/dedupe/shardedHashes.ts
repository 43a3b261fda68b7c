// The two big hashes (allhashes, h:<crawlId>) in the sharded layout: each operation on one digest goes
// to its shard (one slot: the shard's allhashes and every crawl's h: of it share a hash tag); the
// operations on a whole crawl visit every shard, a bounded number at a time.
import { allShards, digestField, digestOfField, shardKeys, shardOfDigest, type DedupeLayout } from "./keys.js";
import type { DedupeRedis } from "./layout.js";

type Sharded = Extract<DedupeLayout, { kind: "sharded" }>;

/** Shards worked on at once by the whole-crawl operations (commands to one node go out pipelined). */
const SHARD_CONCURRENCY = 256;

// This crawl's shard first, then the shard of allhashes and the original crawl's h: of the same shard.
const LOOKUP_LUA = `
local value = redis.call('HGET', KEYS[1], ARGV[1])
local crawl = ARGV[2]
if not value then
  crawl = redis.call('HGET', KEYS[2], ARGV[1])
  if not crawl then return false end
  value = redis.call('HGET', ${shardKeys.luaCrawlHashes("ARGV[3]", "crawl")}, ARGV[1])
  if not value then return false end
end
return {crawl, value}
`;

const ADD_ORIGINAL_LIVE_LUA = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[3])
return 1
`;

// ARGV: crawlId, then digest field/value pairs of one shard. h:<crawl> takes them all (a re-import writes
// the same values); allhashes keeps the first crawl's.
const WRITE_SHARD_LUA = `
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[1])
end
return 1
`;

// One shard of a crawl merged into allhashes (first writer wins). Shards are small, so one page is the norm.
const MERGE_SHARD_LUA = `
local cursor = '0'
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 1000)
  cursor = page[1]
  local fields = page[2]
  for i = 1, #fields, 2 do redis.call('HSETNX', KEYS[2], fields[i], ARGV[1]) end
until cursor == '0'
return 1
`;

// A cancelled concurrent crawl's hashes out of allhashes where they point at it.
const UNPUBLISH_SHARD_LUA = `
local cursor = '0'
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 1000)
  cursor = page[1]
  local fields = page[2]
  for i = 1, #fields, 2 do
    if redis.call('HGET', KEYS[2], fields[i]) == ARGV[1] then redis.call('HDEL', KEYS[2], fields[i]) end
  end
until cursor == '0'
return 1
`;

// A failed import's entries (those of WACZ ARGV[2]) out of one shard, and allhashes entries naming them.
const ROLLBACK_SHARD_LUA = `
local cursor = '0'
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', 1000)
  cursor = page[1]
  local fields = page[2]
  for i = 1, #fields, 2 do
    if string.match(fields[i + 1], '^(%d+) ') == ARGV[2] then
      redis.call('HDEL', KEYS[1], fields[i])
      if redis.call('HGET', KEYS[2], fields[i]) == ARGV[1] then redis.call('HDEL', KEYS[2], fields[i]) end
    end
  end
until cursor == '0'
return 1
`;

/** [crawlId, hash entry] of the original of a digest: this crawl's own, else the merged index's. */
export async function lookupSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, digest: string): Promise<[string, string] | null> {
  const shard = shardOfDigest(digest, layout.prefixDigits);
  const result = (await redis.eval(
    LOOKUP_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), digestField(digest), crawlId, shard,
  )) as [string, string] | null;
  return result ?? null;
}

export async function addOriginalSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, digest: string, value: string, publish: boolean): Promise<boolean> {
  const shard = shardOfDigest(digest, layout.prefixDigits);
  const field = digestField(digest);
  if (!publish) return (await redis.hsetnx(shardKeys.crawlHashes(crawlId, shard), field, value)) === 1;
  return (await redis.eval(ADD_ORIGINAL_LIVE_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), field, value, crawlId)) === 1;
}

/** The indexer's write of a batch: into h:<crawlId> (all) and allhashes (where new), one call per shard touched. */
export async function writeEntriesSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, entries: { digest: string; value: string }[]): Promise<void> {
  const byShard = new Map<string, (Buffer | string)[]>();
  for (const { digest, value } of entries) {
    const shard = shardOfDigest(digest, layout.prefixDigits);
    let args = byShard.get(shard);
    if (!args) byShard.set(shard, (args = []));
    args.push(digestField(digest), value);
  }
  await Promise.all([...byShard].map(([shard, args]) =>
    redis.eval(WRITE_SHARD_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), crawlId, ...args)));
}

/** The hash entries of the originals of digests (null where none), looked up as the crawler does. */
export async function entriesSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, digests: string[]): Promise<(string | null)[]> {
  return Promise.all(digests.map(async (digest) => (await lookupSharded(redis, layout, crawlId, digest))?.[1] ?? null));
}

export async function mergeCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<void> {
  await forEachShard(layout, (shard) => redis.eval(MERGE_SHARD_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), crawlId));
}

export async function unpublishCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<void> {
  await forEachShard(layout, (shard) => redis.eval(UNPUBLISH_SHARD_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), crawlId));
}

export async function rollbackWaczSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, waczIndex: number): Promise<void> {
  await forEachShard(layout, (shard) =>
    redis.eval(ROLLBACK_SHARD_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), crawlId, String(waczIndex)));
}

export async function deleteCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<void> {
  await forEachShard(layout, (shard) => redis.del(shardKeys.crawlHashes(crawlId, shard)));
}

export async function deleteAllHashesSharded(redis: DedupeRedis, layout: Sharded): Promise<void> {
  await forEachShard(layout, (shard) => redis.del(shardKeys.allHashes(shard)));
}

export async function countCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<number> {
  let total = 0;
  await forEachShard(layout, async (shard) => {
    total += await redis.hlen(shardKeys.crawlHashes(crawlId, shard));
  });
  return total;
}

/** Every entry of a hash over all shards, digests as text (tests and moving an index). */
export async function readShardedHash(redis: DedupeRedis, layout: Sharded, key: (shard: string) => string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  await forEachShard(layout, async (shard) => {
    // A reply of Buffers: the fields are raw bytes, which a string reply would mangle.
    const flat = (await redis.callBuffer("HGETALL", key(shard))) as Buffer[];
    for (let i = 0; i < flat.length; i += 2) entries[digestOfField(flat[i]!)] = flat[i + 1]!.toString("utf8");
  });
  return entries;
}

/** Run `work` on every shard, SHARD_CONCURRENCY at a time. */
async function forEachShard(layout: Sharded, work: (shard: string) => Promise<unknown>): Promise<void> {
  const shards = allShards(layout.prefixDigits);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(SHARD_CONCURRENCY, shards.length) }, async () => {
    while (next < shards.length) await work(shards[next++]!);
  }));
}
