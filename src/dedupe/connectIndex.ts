import { connectMaybeCluster } from "../redis/cluster.js";
import { loadLayout, type DedupeRedis } from "./indexLayout.js";

/**
 * Open the dedupe index at a URL: one node or any node of a Redis Cluster. The connection knows the
 * index's layout from then on (keysOf / layoutOf): sharded on a cluster, as stored on a single node.
 */
export async function connectDedupeIndex(url: string, what: string, options: { connectTimeoutMs?: number; failFast?: boolean } = {}): Promise<DedupeRedis> {
  const { client, cluster } = await connectMaybeCluster(url, what, options);
  try {
    await loadLayout(client, cluster);
  } catch (err) {
    client.disconnect();
    throw err;
  }
  return client;
}
