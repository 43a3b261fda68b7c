// Where the sharded layout's shards live: the cluster slot of each shard (its hash tag decides it), the
// shards grouped by slot for the whole-crawl operations, and cached Lua scripts (EVALSHA: the script's
// text goes to a node once, not with every call).
import { createHash } from "node:crypto";
import keySlot from "cluster-key-slot";
import { allShards, shardKeys, type DedupeLayout } from "./indexKeys.js";
import type { DedupeRedis } from "./indexLayout.js";

export type Sharded = Extract<DedupeLayout, { kind: "sharded" }>;

/** Slots worked on at once by the whole-crawl operations (commands to one node go out pipelined). */
const SLOT_CONCURRENCY = 256;

export interface LuaScript {
  text: string;
  sha: string;
}

export function luaScript(text: string): LuaScript {
  return { text, sha: createHash("sha1").update(text).digest("hex") };
}

/** Run a script by its SHA1, sending its text only to a node that does not have it yet. */
export async function runScript(redis: DedupeRedis, script: LuaScript, numKeys: number, ...args: (string | Buffer | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, numKeys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
    return redis.eval(script.text, numKeys, ...args);
  }
}

// Computed once per shard count.
const slotGroups = new Map<number, string[][]>();
const slotMaps = new Map<number, Map<string, number>>();

/** shard -> its cluster slot. */
export function slotOfShard(prefixDigits: number): Map<string, number> {
  let map = slotMaps.get(prefixDigits);
  if (!map) {
    map = new Map(allShards(prefixDigits).map((shard) => [shard, keySlot(shardKeys.allHashes(shard))]));
    slotMaps.set(prefixDigits, map);
  }
  return map;
}

/** The shards of each cluster slot. */
function shardsBySlot(prefixDigits: number): string[][] {
  let groups = slotGroups.get(prefixDigits);
  if (!groups) {
    const bySlot = new Map<number, string[]>();
    for (const [shard, slot] of slotOfShard(prefixDigits)) bySlot.get(slot)?.push(shard) ?? bySlot.set(slot, [shard]);
    groups = [...bySlot.values()];
    slotGroups.set(prefixDigits, groups);
  }
  return groups;
}

/** Run `work` on the shards of every slot, SLOT_CONCURRENCY slots at a time. */
export async function forEachSlotGroup(layout: Sharded, work: (shards: string[]) => Promise<unknown>): Promise<void> {
  const groups = shardsBySlot(layout.prefixDigits);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(SLOT_CONCURRENCY, groups.length) }, async () => {
    while (next < groups.length) await work(groups[next++]!);
  }));
}
