// The indexer's batch write in the sharded layout: a batch's entries for one node go in one script call
// that names the shard keys itself, over as many slots of that node as the batch touches, so a batch
// costs about one call per node however many of the 16,384 slots it spreads over. Should a node not
// serve a slot the client thought it does (resharding, failover, a node restarting), that node's entries
// go again one slot at a time through the cluster client, which follows MOVED/ASK: writing an entry
// twice is harmless (h:<crawl> takes the same value again, allhashes keeps its first writer).
import { Cluster, type Redis } from "ioredis";
import { compactHashEntry, digestField, shardKeys, shardOfDigest } from "./indexKeys.js";
import type { DedupeRedis } from "./layout.js";
import { luaScript, runScript, slotOfShard, type Sharded } from "./shardSlots.js";

/** Entries per script call at most: bounds how long one call holds a node. */
const ENTRIES_PER_CALL = 8192;

// ARGV: crawlId, then per shard its name, its entry count and its field/value pairs. Keys are built here
// (allow-cross-slot-keys: the shards of a call sit in many slots, all on this node).
const WRITE_NODE_LUA = luaScript(`#!lua flags=allow-cross-slot-keys
local crawl = ARGV[1]
local at = 2
while at <= #ARGV do
  local shard = ARGV[at]
  local n = tonumber(ARGV[at + 1])
  local own = ${shardKeys.luaCrawlHashes("shard", "crawl")}
  local all = ${shardKeys.luaAllHashes("shard")}
  for i = at + 2, at + 1 + 2 * n, 2 do
    redis.call('HSET', own, ARGV[i], ARGV[i + 1])
    redis.call('HSETNX', all, ARGV[i], crawl)
  end
  at = at + 2 + 2 * n
end
return 1
`);

// The same for the shards of one slot, keys declared: KEYS are (h:<crawl>, allhashes) of each shard;
// ARGV: crawlId, then per shard its entry count and field/value pairs.
const WRITE_SLOT_LUA = luaScript(`
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
`);

type ShardPairs = Map<string, (Buffer | string)[]>;

/** The indexer's write of a batch: into h:<crawlId> (all) and allhashes (where new); values as formatHashEntry gives them. */
export async function writeEntriesSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, entries: { digest: string; value: string }[]): Promise<void> {
  const byShard: ShardPairs = new Map();
  for (const { digest, value } of entries) {
    const shard = shardOfDigest(digest, layout.prefixDigits);
    let pairs = byShard.get(shard);
    if (!pairs) byShard.set(shard, (pairs = []));
    pairs.push(digestField(digest, layout.prefixDigits), compactHashEntry(value));
  }
  await Promise.all([...shardsByNode(redis, layout, [...byShard.keys()])].map(async ([node, shards]) => {
    for (const chunk of chunked(shards, byShard)) {
      if (!node) {
        await writeBySlot(redis, layout, crawlId, chunk, byShard);
        continue;
      }
      const args = chunk.flatMap((shard) => [shard, String(byShard.get(shard)!.length / 2), ...byShard.get(shard)!]);
      try {
        await runScript(node, WRITE_NODE_LUA, 0, crawlId, ...args);
      } catch {
        // Not this node's slots any more, the node gone for a moment, or a Redis without script flags.
        await writeBySlot(redis, layout, crawlId, chunk, byShard);
      }
    }
  }));
}

/** The node connection serving each shard's slot as the client knows it (null: not known); one node: itself. */
function shardsByNode(redis: DedupeRedis, layout: Sharded, shards: string[]): Map<Redis | null, string[]> {
  if (!(redis instanceof Cluster)) return new Map([[redis, shards]]);
  const nodes = new Map(redis.nodes("master").map((node) => [`${node.options.host}:${node.options.port}`, node]));
  const slotOf = slotOfShard(layout.prefixDigits);
  const byNode = new Map<Redis | null, string[]>();
  for (const shard of shards) {
    const node = nodes.get(redis.slots[slotOf.get(shard)!]?.[0] ?? "") ?? null;
    byNode.get(node)?.push(shard) ?? byNode.set(node, [shard]);
  }
  return byNode;
}

/** Shards in runs of at most ENTRIES_PER_CALL entries (a shard is never split). */
function chunked(shards: string[], byShard: ShardPairs): string[][] {
  const chunks: string[][] = [[]];
  let entries = 0;
  for (const shard of shards) {
    const count = byShard.get(shard)!.length / 2;
    if (entries + count > ENTRIES_PER_CALL && entries > 0) {
      chunks.push([]);
      entries = 0;
    }
    chunks[chunks.length - 1]!.push(shard);
    entries += count;
  }
  return chunks;
}

/** One call per slot, keys declared, through the (cluster) client. */
async function writeBySlot(redis: DedupeRedis, layout: Sharded, crawlId: string, shards: string[], byShard: ShardPairs): Promise<void> {
  const slotOf = slotOfShard(layout.prefixDigits);
  const bySlot = new Map<number, string[]>();
  for (const shard of shards) bySlot.get(slotOf.get(shard)!)?.push(shard) ?? bySlot.set(slotOf.get(shard)!, [shard]);
  await Promise.all([...bySlot.values()].map((slotShards) => {
    const keys = slotShards.flatMap((shard) => [shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard)]);
    const args = slotShards.flatMap((shard) => [String(byShard.get(shard)!.length / 2), ...byShard.get(shard)!]);
    return runScript(redis, WRITE_SLOT_LUA, keys.length, ...keys, crawlId, ...args);
  }));
}
