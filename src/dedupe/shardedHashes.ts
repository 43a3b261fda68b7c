// The two big hashes (allhashes, h:<crawlId>) in the sharded layout: each operation on one digest goes
// to its shard (one slot: the shard's allhashes and every crawl's h: of it share a hash tag); the
// operations on a whole crawl visit every shard, a bounded number at a time.
// Fields and values are stored compact (indexKeys.ts) and given back as the single-node layout has them.
import { compactHashEntry, digestField, digestOfField, expandHashEntry, shardKeys, shardOfDigest } from "./indexKeys.js";
import type { DedupeRedis } from "./indexLayout.js";
import type { MergeTarget } from "./mergeLease.js";
import { fencedArgs, fencedScript, type Fence } from "../ownership/fencedLease.js";
import { forEachSlotGroup, luaScript, runScript, type Sharded } from "./shardSlots.js";

export { writeEntriesSharded } from "./shardedImport.js";

// This crawl's shard first, then the shard of allhashes and the original crawl's h: of the same shard.
const LOOKUP_LUA = luaScript(`
local value = redis.call('HGET', KEYS[1], ARGV[1])
local crawl = ARGV[2]
if not value then
  crawl = redis.call('HGET', KEYS[2], ARGV[1])
  if not crawl then return false end
  value = redis.call('HGET', ${shardKeys.luaCrawlHashes("ARGV[3]", "crawl")}, ARGV[1])
  if not value then return false end
end
return {crawl, value}
`);

const ADD_ORIGINAL_LIVE_LUA = luaScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[3])
return 1
`);

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
const mergeGroup = overShardPairs("redis.call('HSETNX', KEYS[k + 1], fields[i], ARGV[1])", {
  before: "local total = 0",
  perShard: "total = total + redis.call('HLEN', KEYS[k])",
  result: "total",
});
const MERGE_GROUP_LUA = luaScript(mergeGroup);
// The same into the allhashes a purge rebuilds, fenced by its merge lease (the slot group's fence).
const MERGE_GROUP_REBUILD_LUA = luaScript(fencedScript(mergeGroup));

// A cancelled concurrent crawl's hashes out of allhashes where they point at it.
const UNPUBLISH_GROUP_LUA = luaScript(overShardPairs("if redis.call('HGET', KEYS[k + 1], fields[i]) == ARGV[1] then redis.call('HDEL', KEYS[k + 1], fields[i]) end"));

// A failed import's entries (those of WACZ ARGV[2]) out of h:<crawl>, and allhashes entries naming them.
const ROLLBACK_GROUP_LUA = luaScript(overShardPairs(`if string.match(fields[i + 1], '^(%d+) ') == ARGV[2] then
        redis.call('HDEL', KEYS[k], fields[i])
        if redis.call('HGET', KEYS[k + 1], fields[i]) == ARGV[1] then redis.call('HDEL', KEYS[k + 1], fields[i]) end
      end`));


/** [crawlId, hash entry] of the original of a digest: this crawl's own, else the merged index's. */
export async function lookupSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, digest: string): Promise<[string, string] | null> {
  const shard = shardOfDigest(digest, layout.prefixDigits);
  const result = (await runScript(
    redis, LOOKUP_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), digestField(digest, layout.prefixDigits), crawlId, shard,
  )) as [string, string] | null;
  return result ? [result[0], expandHashEntry(result[1])] : null;
}

export async function addOriginalSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, digest: string, value: string, publish: boolean): Promise<boolean> {
  const shard = shardOfDigest(digest, layout.prefixDigits);
  const field = digestField(digest, layout.prefixDigits);
  const stored = compactHashEntry(value);
  if (!publish) return (await redis.hsetnx(shardKeys.crawlHashes(crawlId, shard), field, stored)) === 1;
  return (await runScript(redis, ADD_ORIGINAL_LIVE_LUA, 2, shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard), field, stored, crawlId)) === 1;
}

/** The hash entries of the originals of digests (null where none), looked up as the crawler does. */
export async function entriesSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, digests: string[]): Promise<(string | null)[]> {
  return Promise.all(digests.map(async (digest) => (await lookupSharded(redis, layout, crawlId, digest))?.[1] ?? null));
}

/** KEYS of a whole-crawl script for one slot's shards: h:<crawl> and allhashes (or the one being rebuilt) of each. */
const pairKeys = (crawlId: string, shards: string[], into: "live" | "rebuild") =>
  shards.flatMap((shard) => [shardKeys.crawlHashes(crawlId, shard), into === "live" ? shardKeys.allHashes(shard) : shardKeys.rebuildHashes(shard)]);

// KEYS: fence, then (rebuilt, live) pairs; ARGV: the merge lease's epoch. Each rebuilt key replaces its
// live one (none rebuilt: the live one goes), unless a newer rebuild took the lease over (fencedScript).
export const SWAP_KEYS_LUA = luaScript(fencedScript(`
for k = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[k]) == 1 then redis.call('RENAME', KEYS[k], KEYS[k + 1]) else redis.call('DEL', KEYS[k + 1]) end
end
return 1
`));

/** Merge a crawl's hashes into allhashes (or the one a purge is rebuilding under `into`); returns how many it has. */
export async function mergeCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, into: MergeTarget = "live"): Promise<number> {
  let total = 0;
  await forEachSlotGroup(layout, async (shards) => {
    const count = (await (into === "live"
      ? runScript(redis, MERGE_GROUP_LUA, shards.length * 2, ...pairKeys(crawlId, shards, "live"), crawlId)
      : runScript(redis, MERGE_GROUP_REBUILD_LUA, ...fencedArgs(into.shardFence(shards), pairKeys(crawlId, shards, "rebuild"), [crawlId])))) as number;
    total += count;
  });
  return total;
}

export async function unpublishCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<void> {
  await forEachSlotGroup(layout, (shards) => runScript(redis, UNPUBLISH_GROUP_LUA, shards.length * 2, ...pairKeys(crawlId, shards, "live"), crawlId));
}

export async function rollbackWaczSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, waczIndex: number): Promise<void> {
  await forEachSlotGroup(layout, (shards) => runScript(redis, ROLLBACK_GROUP_LUA, shards.length * 2, ...pairKeys(crawlId, shards, "live"), crawlId, String(waczIndex)));
}

export async function deleteCrawlSharded(redis: DedupeRedis, layout: Sharded, crawlId: string): Promise<void> {
  await forEachSlotGroup(layout, (shards) => redis.del(...shards.map((shard) => shardKeys.crawlHashes(crawlId, shard))));
}

// KEYS: fence, then keys to delete; ARGV: the merge lease's epoch.
export const DELETE_KEYS_LUA = luaScript(fencedScript(`return redis.call('DEL', unpack(KEYS))`));

/** Drop what an earlier, unfinished rebuild left of the allhashes it was building (fenced: see SWAP_KEYS_LUA). */
export async function clearRebuildSharded(redis: DedupeRedis, layout: Sharded, fenceOf: (shards: string[]) => Fence): Promise<void> {
  await forEachSlotGroup(layout, (shards) => runScript(redis, DELETE_KEYS_LUA, ...fencedArgs(fenceOf(shards), shards.map((shard) => shardKeys.rebuildHashes(shard)))));
}

/**
 * Put the rebuilt allhashes in place, shard by shard (each shard atomically: a lookup sees the old or the
 * new), each slot group fenced by the merge lease (`fenceOf` its shards).
 */
export async function swapRebuiltSharded(redis: DedupeRedis, layout: Sharded, fenceOf: (shards: string[]) => Fence): Promise<void> {
  await forEachSlotGroup(layout, (shards) => runScript(
    redis, SWAP_KEYS_LUA, ...fencedArgs(fenceOf(shards), shards.flatMap((shard) => [shardKeys.rebuildHashes(shard), shardKeys.allHashes(shard)])),
  ));
}

/**
 * Every entry of a crawl's h: (or, crawlId null, of allhashes) over all shards, as the single-node layout
 * has it: digests and hash entries as text (tests and moving an index).
 */
export async function readShardedHash(redis: DedupeRedis, layout: Sharded, crawlId: string | null): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  await forEachSlotGroup(layout, async (shards) => Promise.all(shards.map(async (shard) => {
    // A reply of Buffers: the fields are raw bytes, which a string reply would mangle.
    const flat = (await redis.callBuffer("HGETALL", crawlId === null ? shardKeys.allHashes(shard) : shardKeys.crawlHashes(crawlId, shard))) as Buffer[];
    for (let i = 0; i < flat.length; i += 2) {
      const value = flat[i + 1]!.toString("utf8");
      entries[digestOfField(flat[i]!, shard)] = crawlId === null ? value : expandHashEntry(value);
    }
  })));
  return entries;
}
