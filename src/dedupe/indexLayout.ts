import type { Cluster, Redis } from "ioredis";
import {
  dedupeKeys,
  DEFAULT_PREFIX_DIGITS,
  LAYOUT_KEY,
  LUA_KEY,
  SHARDED_FORMAT,
  SHARDED_LUA_KEY,
  shardedLayoutRecord,
  shardedMetaKeys,
  SINGLE_LAYOUT,
  type DedupeKeys,
  type DedupeLayout,
  type LuaKeys,
} from "./indexKeys.js";

/** A connection to the dedupe index: one node, or a Redis Cluster (the commands the index uses are common to both). */
export type DedupeRedis = Redis | Cluster;

// Which layout the index behind a connection has: learned once at connect (loadLayout), then read
// wherever keys are named. A connection nobody loaded is the single-node layout (today's names).
const layouts = new WeakMap<object, DedupeLayout>();

export function layoutOf(redis: DedupeRedis): DedupeLayout {
  return layouts.get(redis) ?? SINGLE_LAYOUT;
}

export function keysOf(redis: DedupeRedis): DedupeKeys {
  return layoutOf(redis).kind === "sharded" ? shardedMetaKeys : dedupeKeys;
}

export function luaKeysOf(redis: DedupeRedis): LuaKeys {
  return layoutOf(redis).kind === "sharded" ? SHARDED_LUA_KEY : LUA_KEY;
}

/** A script written against LuaKeys, compiled once for each layout. */
export function scriptByLayout(build: (lua: LuaKeys) => string): (redis: DedupeRedis) => string {
  const single = build(LUA_KEY);
  const sharded = build(SHARDED_LUA_KEY);
  return (redis) => (layoutOf(redis).kind === "sharded" ? sharded : single);
}

/**
 * Learn the index's layout from {dd}layout. A cluster always uses the sharded layout (created with
 * `prefixDigits` shards if the index is new); a single node keeps today's layout unless the index there
 * was created sharded (createShardedLayout).
 */
export async function loadLayout(redis: DedupeRedis, cluster: boolean, prefixDigits = DEFAULT_PREFIX_DIGITS): Promise<DedupeLayout> {
  if (cluster) await redis.set(LAYOUT_KEY, shardedLayoutRecord(prefixDigits), "NX");
  const stored = await redis.get(LAYOUT_KEY);
  const layout = stored ? parseLayout(stored) : SINGLE_LAYOUT;
  layouts.set(redis, layout);
  return layout;
}

/** Make an empty single node hold a sharded index (to compare, or to move to a cluster later by rebuilding). */
export async function createShardedLayout(redis: DedupeRedis, prefixDigits = DEFAULT_PREFIX_DIGITS): Promise<DedupeLayout> {
  if ((await redis.exists(dedupeKeys.allHashes, dedupeKeys.allCrawls, dedupeKeys.uncommittedCrawls)) > 0) {
    throw new Error("this Redis already holds a single-node dedupe index: rebuild it into an empty Redis instead (see docs/user-guide/dedupe.md)");
  }
  return loadLayout(redis, true, prefixDigits);
}

function parseLayout(json: string): DedupeLayout {
  let parsed: { layout?: unknown; prefixDigits?: unknown; format?: unknown } = {};
  try {
    parsed = (JSON.parse(json) as typeof parsed | null) ?? {};
  } catch {
    // Not JSON: refused below like any other unknown record.
  }
  const digits = Number(parsed.prefixDigits);
  if (parsed.layout !== "sharded" || !Number.isInteger(digits) || digits < 1 || digits > 6) {
    throw new Error(`${LAYOUT_KEY} holds an unknown dedupe layout: ${json}`);
  }
  // The field and value encoding: one written by another version of the crawler cannot be read as this one.
  if (parsed.format !== SHARDED_FORMAT) {
    throw new Error(
      `${LAYOUT_KEY} says this sharded dedupe index has format ${parsed.format === undefined ? "1 (no format field)" : JSON.stringify(parsed.format)}, ` +
        `but this crawler reads format ${SHARDED_FORMAT} only: rebuild the index from its WACZ files with the indexer into an empty Redis (see docs/user-guide/dedupe.md)`,
    );
  }
  return { kind: "sharded", prefixDigits: digits };
}
