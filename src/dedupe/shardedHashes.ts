// The two big hashes (allhashes, h:<crawlId>) in the sharded layout: each operation on one digest goes
// to its shard (one slot: the shard's allhashes and every crawl's h: of it share a hash tag); the
// operations on a whole crawl visit every shard, a bounded number at a time.
import keySlot from "cluster-key-slot";
import { allShards, digestField, digestOfField, shardKeys, shardOfDigest, type DedupeLayout } from "./keys.js";
import type { DedupeRedis } from "./layout.js";

type Sharded = Extract<DedupeLayout, { kind: "sharded" }>;

/** Slots worked on at once by the whole-crawl operations (commands to one node go out pipelined). */
const SLOT_CONCURRENCY = 256;

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

// The shards of one slot in one call. KEYS: (h:<crawl>, allhashes) of each shard; ARGV: crawlId, then
// per shard its entry count and digest field/value pairs. h:<crawl> takes them all (a re-import writes
// the same values); allhashes keeps the first crawl's.
const WRITE_GROUP_LUA = `
local at = 2
for k = 1, #KEYS, 2 do
  local n = tonumber(ARGV[at])
  for i = at + 1, at + 2 * n, 2 do
    redis.call('HSET', KEYS[k], ARGV[i], ARGV[i + 1])
    redis.call('HSETNX', KEYS[k + 1], ARGV[i], ARGV[1])
  end
  at = at + 1 + 2 * n
end
return 1
`;

// The whole-crawl scripts take the shards of one slot at a time: KEYS are pairs (h:<crawl> shard,
// allhashes shard), all in one slot, so one call per slot (at most 16384) whatever the shard count.

/**
 * A whole-crawl script over shard pairs: `perEntry` runs for each field/value of every h:<crawl> shard
 * (KEYS[k]), with its allhashes shard as KEYS[k + 1]; `perShard` runs once per pair before its scan.
 */
function overShardPairs(perEntry: string, opts: { perShard?: string; before?: string; result?: string } = {}): string {
  return `${opts.before ?? ""}
for k = 1, #KEYS, 2 do
  ${opts.perShard ?? ""}
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', KEYS[k], cursor, 'COUNT', 1000)
    cursor = page[1]
    local fields = page[2]
    for i = 1, #fields, 2 do
      ${perEntry}
    end
  until cursor == '0'
end
return ${opts.result ?? "1"}
`;
}

// Merged into allhashes (first writer wins); returns how many hashes the crawl has in these shards.
const MERGE_GROUP_LUA = overShardPairs("redis.call('HSETNX', KEYS[k + 1], fields[i], ARGV[1])", {
  before: "local total = 0",
  perShard: "total = total + redis.call('HLEN', KEYS[k])",
  result: "total",
});

// A cancelled concurrent crawl's hashes out of allhashes where they point at it.
const UNPUBLISH_GROUP_LUA = overShardPairs("if redis.call('HGET', KEYS[k + 1], fields[i]) == ARGV[1] then redis.call('HDEL', KEYS[k + 1], fields[i]) end");

// A failed import's entries (those of WACZ ARGV[2]) out of h:<crawl>, and allhashes entries naming them.
const ROLLBACK_GROUP_LUA = overShardPairs(`if string.match(fields[i + 1], '^(%d+) ') == ARGV[2] then
        redis.call('HDEL', KEYS[k], fields[i])
        if redis.call('HGET', KEYS[k + 1], fields[i]) == ARGV[1] then redis.call('HDEL', KEYS[k + 1], fields[i]) end
      end`);


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

/** The indexer's write of a batch: into h:<crawlId> (all) and allhashes (where new), one call per slot touched. */
export async function writeEntriesSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, entries: { digest: string; value: string }[]): Promise<void> {
  const slotOf = slotOfShard(layout.prefixDigits);
  const bySlot = new Map<number, Map<string, (Buffer | string)[]>>();
  for (const { digest, value } of entries) {
    const shard = shardOfDigest(digest, layout.prefixDigits);
    const slot = slotOf.get(shard)!;
    let shards = bySlot.get(slot);
    if (!shards) bySlot.set(slot, (shards = new Map()));
    let pairs = shards.get(shard);
    if (!pairs) shards.set(shard, (pairs = []));
    pairs.push(digestField(digest), value);
  }
  await Promise.all([...bySlot.values()].map((shards) => {
    const keys = pairKeys(crawlId, [...shards.keys()]);
    const args = [...shards.values()].flatMap((pairs) => [String(pairs.length / 2), ...pairs]);
    return redis.eval(WRITE_GROUP_LUA, keys.length, ...keys, crawlId, ...args);
  }));
}

/** The hash entries of the originals of digests (null where none), looked up as the crawler does. */
export async function entriesSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, digests: string[]): Promise<(string | null)[]> {
  return Promise.all(digests.map(async (digest) => (await lookupSharded(redis, layout, crawlId, digest))?.[1] ?? null));
}

/** KEYS of a whole-crawl script for one slot's shards: h:<crawl> and allhashes of each. */
const pairKeys = (crawlId: string, shards: string[]) => shards.flatMap((shard) => [shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard)]);

/** Merge a crawl's hashes into allhashes; returns how many it has. */
export async function mergeCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<number> {
  let total = 0;
  await forEachSlotGroup(layout, async (shards) => {
    const count = (await redis.eval(MERGE_GROUP_LUA, shards.length * 2, ...pairKeys(crawlId, shards), crawlId)) as number;
    total += count;
  });
  return total;
}

export async function unpublishCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<void> {
  await forEachSlotGroup(layout, (shards) => redis.eval(UNPUBLISH_GROUP_LUA, shards.length * 2, ...pairKeys(crawlId, shards), crawlId));
}

export async function rollbackWaczSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, waczIndex: number): Promise<void> {
  await forEachSlotGroup(layout, (shards) => redis.eval(ROLLBACK_GROUP_LUA, shards.length * 2, ...pairKeys(crawlId, shards), crawlId, String(waczIndex)));
}

export async function deleteCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<void> {
  await forEachSlotGroup(layout, (shards) => redis.del(...shards.map((shard) => shardKeys.crawlHashes(crawlId, shard))));
}

export async function deleteAllHashesSharded(redis: DedupeRedis, layout: Sharded): Promise<void> {
  await forEachSlotGroup(layout, (shards) => redis.del(...shards.map((shard) => shardKeys.allHashes(shard))));
}


/** Every entry of a hash over all shards, digests as text (tests and moving an index). */
export async function readShardedHash(redis: DedupeRedis, layout: Sharded, key: (shard: string) => string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  await forEachSlotGroup(layout, async (shards) => Promise.all(shards.map(async (shard) => {
    // A reply of Buffers: the fields are raw bytes, which a string reply would mangle.
    const flat = (await redis.callBuffer("HGETALL", key(shard))) as Buffer[];
    for (let i = 0; i < flat.length; i += 2) entries[digestOfField(flat[i]!)] = flat[i + 1]!.toString("utf8");
  })));
  return entries;
}

// The shards of each cluster slot (a shard's tag decides its slot), computed once per shard count.
const slotGroups = new Map<number, string[][]>();

function shardsBySlot(prefixDigits: number): string[][] {
  let groups = slotGroups.get(prefixDigits);
  if (!groups) {
    const bySlot = new Map<number, string[]>();
    for (const shard of allShards(prefixDigits)) {
      const slot = keySlot(shardKeys.allHashes(shard));
      bySlot.get(slot)?.push(shard) ?? bySlot.set(slot, [shard]);
    }
    groups = [...bySlot.values()];
    slotGroups.set(prefixDigits, groups);
  }
  return groups;
}

const slotMaps = new Map<number, Map<string, number>>();

/** shard -> its cluster slot. */
function slotOfShard(prefixDigits: number): Map<string, number> {
  let map = slotMaps.get(prefixDigits);
  if (!map) {
    map = new Map(allShards(prefixDigits).map((shard) => [shard, keySlot(shardKeys.allHashes(shard))]));
    slotMaps.set(prefixDigits, map);
  }
  return map;
}

/** Run `work` on the shards of every slot, SLOT_CONCURRENCY slots at a time. */
async function forEachSlotGroup(layout: Sharded, work: (shards: string[]) => Promise<unknown>): Promise<void> {
  const groups = shardsBySlot(layout.prefixDigits);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(SLOT_CONCURRENCY, groups.length) }, async () => {
    while (next < groups.length) await work(groups[next++]!);
  }));
}
