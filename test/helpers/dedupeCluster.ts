import { Cluster, Redis } from "ioredis";
import { digestOfField, expandHashEntry, LAYOUT_KEY, shardedLayoutRecord } from "../../src/dedupe/indexKeys.js";
import { loadLayout, type DedupeRedis } from "../../src/dedupe/indexLayout.js";

/**
 * Import bookkeeping, timestamps and the merge lease's fences ({<shard>}ah:fence; shard dd's reads "ah:fence",
 * its tag being the meta keys' one): not part of what an index says, so left out of comparisons.
 */
const BOOKKEEPING = /^(src:|pending:|import:|updateProgress|last_update_ts|(\{[0-9a-f]+\})?ah:fence$)/;

/** Every node holding keys: the masters of a cluster, or the one node. */
function nodesOf(redis: DedupeRedis): Redis[] {
  return redis instanceof Cluster ? redis.nodes("master") : [redis];
}

/**
 * An index as the single-node layout would hold it (the names of dedupe/indexKeys.ts, digests as text), whichever
 * layout it has: a sharded index's {shard}ah and {shard}h:<crawl> are joined into allhashes and h:<crawl>.
 * KEYS on every node: for tests only.
 */
export async function singleLayoutView(redis: DedupeRedis): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  for (const node of nodesOf(redis)) {
    for (const rawKey of await node.keysBuffer("*")) {
      const key = rawKey.toString("utf8");
      if (key === LAYOUT_KEY) continue;
      const shard = /^\{([0-9a-f]+)\}(ah|h:.*)$/.exec(key);
      const name = shard ? (shard[2] === "ah" ? "allhashes" : shard[2]!) : key.replace(/^\{dd\}/, "");
      if (BOOKKEEPING.test(name)) continue;
      const type = await node.type(key);
      if (type === "hash") {
        const flat = (await node.callBuffer("HGETALL", key)) as Buffer[];
        const entries = (state[name] ??= {}) as Record<string, string>;
        for (let i = 0; i < flat.length; i += 2) {
          const value = flat[i + 1]!.toString("utf8");
          // A sharded index's fields and h: values are compact (dedupe/indexKeys.ts): read back as the single-node layout has them.
          if (!shard) entries[flat[i]!.toString("utf8")] = value;
          else entries[digestOfField(flat[i]!, shard[1]!)] = shard[2] === "ah" ? value : expandHashEntry(value);
        }
      } else if (type === "set") state[name] = (await node.smembers(key)).sort();
      else if (type === "list") state[name] = await node.lrange(key, 0, -1);
      else state[name] = await node.get(key);
    }
  }
  for (const value of Object.values(state)) {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      const sorted = Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)));
      Object.keys(value).forEach((k) => delete (value as Record<string, string>)[k]);
      Object.assign(value, sorted);
    }
  }
  return Object.fromEntries(Object.entries(state).sort(([a], [b]) => a.localeCompare(b)));
}

/** Empty every node (between scenarios) and set the shard count the next index gets (this client's too). */
export async function resetCluster(cluster: Cluster, prefixDigits: number): Promise<void> {
  for (const node of cluster.nodes("master")) await node.flushall();
  await cluster.set(LAYOUT_KEY, shardedLayoutRecord(prefixDigits));
  await loadLayout(cluster, true);
}
