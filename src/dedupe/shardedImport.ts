// The indexer's batch write in the sharded layout: a batch's entries for one node go in one script call
// that names the shard keys itself, over as many slots of that node as the batch touches, so a batch
// costs about one call per node however many of the 16,384 slots it spreads over. Should a node not
// serve a slot the client thought it does (resharding, failover, a node restarting), that node's entries
// go again one slot at a time through the cluster client, which follows MOVED/ASK: writing an entry
// twice is harmless (h:<crawl> takes the same value again, allhashes keeps its holder).
// The rules are those of the single-node import (indexer/hashWriteBatch.ts): in h:<crawl> the entry of the
// WACZ latest in the crawl's list wins; in allhashes a payload no crawl holds is taken, the others are
// handed back with their holder for the crawl order to decide (payloadOwnership.ts).
import { Cluster, type Redis } from "ioredis";
import { compactHashEntry, digestField, shardKeys, shardOfDigest } from "./indexKeys.js";
import type { DedupeRedis } from "./indexLayout.js";
import type { HeldDigest } from "./payloadOwnership.js";
import { luaScript, runScript, slotOfShard, type Sharded } from "./shardSlots.js";

// One entry (Lua, in a loop over i): h:<crawl> unless it holds the entry of a later WACZ; allhashes if
// no crawl holds it, else its ARGV position and holder go into \`held\`. HSETNX first: a payload new to both
// costs what a plain write would; only one already there is read and compared.
const WRITE_ENTRY = (own: string, all: string) => `
    if redis.call('HSETNX', ${own}, ARGV[i], ARGV[i + 1]) == 0 then
      local current = redis.call('HGET', ${own}, ARGV[i])
      if current ~= ARGV[i + 1] and (tonumber(string.match(current, '^(%d+) ')) or -1) <= tonumber(string.match(ARGV[i + 1], '^(%d+) ')) then
        redis.call('HSET', ${own}, ARGV[i], ARGV[i + 1])
      end
    end
    if redis.call('HSETNX', ${all}, ARGV[i], crawl) == 0 then
      local holder = redis.call('HGET', ${all}, ARGV[i])
      if holder ~= crawl then held[#held + 1] = i; held[#held + 1] = holder end
    end`;

/** Entries per script call at most: bounds how long one call holds a node. */
const ENTRIES_PER_CALL = 8192;

// ARGV: crawlId, then per shard its name, its entry count and its field/value pairs. Keys are built here
// (allow-cross-slot-keys: the shards of a call sit in many slots, all on this node).
const WRITE_NODE_LUA = luaScript(`#!lua flags=allow-cross-slot-keys
local crawl = ARGV[1]
local held = {}
local at = 2
while at <= #ARGV do
  local shard = ARGV[at]
  local n = tonumber(ARGV[at + 1])
  local own = ${shardKeys.luaCrawlHashes("shard", "crawl")}
  local all = ${shardKeys.luaAllHashes("shard")}
  for i = at + 2, at + 1 + 2 * n, 2 do${WRITE_ENTRY("own", "all")}
  end
  at = at + 2 + 2 * n
end
return held
`);

// The same for the shards of one slot, keys declared: KEYS are (h:<crawl>, allhashes) of each shard;
// ARGV: crawlId, then per shard its entry count and field/value pairs.
const WRITE_SLOT_LUA = luaScript(`
local crawl = ARGV[1]
local held = {}
local at = 2
for k = 1, #KEYS, 2 do
  local n = tonumber(ARGV[at])
  for i = at + 1, at + 2 * n, 2 do${WRITE_ENTRY("KEYS[k]", "KEYS[k + 1]")}
  end
  at = at + 1 + 2 * n
end
return held
`);

/** The held digests a write script returned (ARGV positions, holders), given the ARGV it was called with and each position's shard. */
function heldOf(reply: unknown, argv: (Buffer | string)[], shardAt: string[]): HeldDigest[] {
  const flat = reply as (number | string)[];
  const held: HeldDigest[] = [];
  for (let j = 0; j < flat.length; j += 2) {
    const position = Number(flat[j]) - 1;
    held.push({ key: shardKeys.allHashes(shardAt[position]!), field: argv[position]!, holder: String(flat[j + 1]) });
  }
  return held;
}

type ShardPairs = Map<string, (Buffer | string)[]>;

/**
 * The indexer's write of a batch: into h:<crawlId> and allhashes by the rules above; values as formatHashEntry
 * gives them. Returns the payloads other crawls hold.
 */
export async function writeEntriesSharded(redis: DedupeRedis, layout: Sharded, crawlId: string, entries: { digest: string; value: string }[]): Promise<HeldDigest[]> {
  const byShard: ShardPairs = new Map();
  for (const { digest, value } of entries) {
    const shard = shardOfDigest(digest, layout.prefixDigits);
    let pairs = byShard.get(shard);
    if (!pairs) byShard.set(shard, (pairs = []));
    pairs.push(digestField(digest, layout.prefixDigits), compactHashEntry(value));
  }
  const held: HeldDigest[] = [];
  await Promise.all([...shardsByNode(redis, layout, [...byShard.keys()])].map(async ([node, shards]) => {
    for (const chunk of chunked(shards, byShard)) {
      if (!node) {
        held.push(...(await writeBySlot(redis, layout, crawlId, chunk, byShard)));
        continue;
      }
      const argv: (Buffer | string)[] = [crawlId];
      const shardAt: string[] = [""];
      for (const shard of chunk) {
        const pairs = byShard.get(shard)!;
        argv.push(shard, String(pairs.length / 2), ...pairs);
        shardAt.push(...Array<string>(2 + pairs.length).fill(shard));
      }
      try {
        held.push(...heldOf(await runScript(node, WRITE_NODE_LUA, 0, ...argv), argv, shardAt));
      } catch {
        // Not this node's slots any more, the node gone for a moment, or a Redis without script flags.
        held.push(...(await writeBySlot(redis, layout, crawlId, chunk, byShard)));
      }
    }
  }));
  return held;
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
async function writeBySlot(redis: DedupeRedis, layout: Sharded, crawlId: string, shards: string[], byShard: ShardPairs): Promise<HeldDigest[]> {
  const slotOf = slotOfShard(layout.prefixDigits);
  const bySlot = new Map<number, string[]>();
  for (const shard of shards) bySlot.get(slotOf.get(shard)!)?.push(shard) ?? bySlot.set(slotOf.get(shard)!, [shard]);
  const replies = await Promise.all([...bySlot.values()].map(async (slotShards) => {
    const keys = slotShards.flatMap((shard) => [shardKeys.crawlHashes(crawlId, shard), shardKeys.allHashes(shard)]);
    const argv: (Buffer | string)[] = [crawlId];
    const shardAt: string[] = [""];
    for (const shard of slotShards) {
      const pairs = byShard.get(shard)!;
      argv.push(String(pairs.length / 2), ...pairs);
      shardAt.push(...Array<string>(1 + pairs.length).fill(shard));
    }
    return heldOf(await runScript(redis, WRITE_SLOT_LUA, keys.length, ...keys, ...argv), argv, shardAt);
  }));
  return replies.flat();
}
