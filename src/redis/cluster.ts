import { Cluster, type Redis } from "ioredis";
import { withTimeout } from "../util/deadline.js";
import { connectRedis, redactUrl, RedisUnreachableError } from "./connect.js";
import { evalScriptsBySha } from "./scripts.js";

const ALL_SLOTS = 16384;

/** A reachable Redis Cluster node whose cluster cannot serve every key (slots unassigned, or a node down). */
export class ClusterNotReadyError extends RedisUnreachableError {}

/** Fields of INFO / CLUSTER INFO ("name:value" lines). */
function infoFields(text: string): Map<string, string> {
  return new Map(text.split(/\r?\n/).filter((line) => line.includes(":")).map((line) => {
    const at = line.indexOf(":");
    return [line.slice(0, at), line.slice(at + 1).trim()];
  }));
}

/**
 * Connect to a Redis URL that may name any node of a Redis Cluster: a plain node gives a plain client, a
 * cluster node a cluster client (it follows MOVED/ASK redirections and learns the slot map itself). A cluster
 * that does not serve all 16384 slots is refused with one line saying so, rather than failing key by key later.
 */
export async function connectMaybeCluster(
  url: string,
  what: string,
  options: { connectTimeoutMs?: number; failFast?: boolean } = {},
): Promise<{ client: Redis | Cluster; cluster: boolean }> {
  const probe = await connectRedis(url, what, options);
  const enabled = infoFields(await probe.info("cluster")).get("cluster_enabled") === "1";
  if (!enabled) return { client: probe, cluster: false };
  try {
    const state = infoFields((await probe.call("CLUSTER", "INFO")) as string);
    const assigned = Number(state.get("cluster_slots_assigned") ?? 0);
    const ok = Number(state.get("cluster_slots_ok") ?? 0);
    if (state.get("cluster_state") !== "ok" || assigned < ALL_SLOTS || ok < ALL_SLOTS) {
      throw new ClusterNotReadyError(
        `${what} at ${redactUrl(url)} is a Redis Cluster node, but the cluster is not serving every slot ` +
          `(cluster_state:${state.get("cluster_state") ?? "?"}, ${assigned} of ${ALL_SLOTS} slots assigned, ${ok} ok): ` +
          "assign the missing slots or bring the failed nodes back (redis-cli --cluster check/fix)",
      );
    }
  } finally {
    probe.disconnect();
  }
  const { host, port, username, password, tls } = probe.options;
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  const cluster = new Cluster([{ host, port }], {
    lazyConnect: true,
    // No auto-pipelining: a MOVED reply inside an automatic pipeline (a node restarting) reached the
    // caller instead of being followed. Commands still go out without waiting for earlier replies.
    enableOfflineQueue: !options.failFast,
    clusterRetryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5000),
    // A node restarting: commands wait for it instead of failing (the crawler's failFast writes full
    // responses instead of waiting).
    retryDelayOnClusterDown: 300,
    retryDelayOnFailover: 300,
    maxRedirections: options.failFast ? 4 : 64,
    redisOptions: {
      username, password, tls, connectTimeout: connectTimeoutMs,
      ...(options.failFast ? { maxRetriesPerRequest: 0, commandTimeout: 3000 } : { maxRetriesPerRequest: null }),
    },
  });
  evalScriptsBySha(cluster);
  let lastError = "";
  cluster.on("error", (err: Error) => (lastError = err.message));
  try {
    await withTimeout(cluster.connect(), connectTimeoutMs, `no answer within ${connectTimeoutMs} ms`);
    await withTimeout(cluster.ping(), connectTimeoutMs, `no answer within ${connectTimeoutMs} ms`);
  } catch (err) {
    cluster.disconnect();
    const reason = lastError || (err instanceof Error ? err.message : String(err));
    throw new RedisUnreachableError(`cannot reach ${what} (Redis Cluster) at ${redactUrl(url)}: ${reason}`);
  }
  return { client: cluster, cluster: true };
}
