import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Cluster, Redis } from "ioredis";
import type { CrawlOptions } from "../config/crawlOptions.js";
import { connectDedupeIndex } from "../dedupe/connectIndex.js";
import { DedupeIndex } from "../dedupe/dedupeIndex.js";
import type { DedupeRedis } from "../dedupe/indexLayout.js";
import { logger } from "../log/logger.js";
import { connectMaybeCluster } from "../redis/cluster.js";
import { connectRedis, connectionUrl, redactUrl } from "../redis/connect.js";
import { registerSecrets } from "../log/secrets.js";
import { EmbeddedRedis } from "../redis/embedded.js";
import { Frontier } from "../frontier/frontier.js";
import { Liveness } from "../state/membership/fencing.js";
import { Membership } from "../state/membership/membership.js";
import { newProcessId } from "../ownership/processIdentity.js";
import { WriterSlots } from "../state/membership/writerSlots.js";
import { withTimeout } from "../util/deadline.js";
import type { CollectionPaths } from "../config/collectionPaths.js";

/** This process's place in a crawl: its Redis connections, its membership and its writer slot. */
export interface JoinedCrawl {
  processId: string;
  /** The crawl-state Redis (one server, or a Redis Cluster). */
  redis: Redis | Cluster;
  dedupe: DedupeIndex;
  membership: Membership;
  /** This process writes only while its heartbeat is surely in force. */
  liveness: Liveness;
  /** The shared frontier: queue, leases, counts. */
  state: Frontier;
  slots: WriterSlots;
  /** This process's writer slot (several processes on one crawl each have one). */
  slot: number;
  /** Stop the heartbeat (clearing it) and close the connections (and the embedded redis-server). */
  close(): Promise<void>;
}

/**
 * Join the crawl: open the crawl-state Redis (an embedded redis-server by default) and the dedupe
 * index, register the crawl there, start this process's heartbeat, take over from dead processes of
 * this machine at once, and claim a writer slot.
 */
export async function joinCrawl(options: CrawlOptions, paths: CollectionPaths, stop: { fatal(message: string): void }): Promise<JoinedCrawl> {
  const processId = newProcessId(randomUUID().slice(0, 8));
  const serverGone = new AbortController();
  const { redis, embedded } = await openStateRedis(options.redisStoreUrl, paths.redisData, serverGone.signal, options.debugging.debugAccessRedis);
  const membership = new Membership(redis, options.crawlId, processId);
  let dedupeRedis: DedupeRedis | null = null;
  // Nobody restarts the embedded server: without it every command would wait forever. Stop the crawl
  // and fail whatever waits on it; its append-only file lets the same command resume.
  embedded?.onUnexpectedExit((message) => {
    stop.fatal(`${message}: the crawl cannot go on; run the same command again to resume`);
    serverGone.abort();
  });
  let liveness: Liveness | null = null;
  const close = async () => {
    liveness?.stop();
    await withTimeout(membership.clearHeartbeat(), 5000, "heartbeat not cleared").catch(() => undefined);
    dedupeRedis?.disconnect();
    redis.disconnect();
    await embedded?.stop();
  };
  try {
    dedupeRedis = options.redisDedupeUrl
      ? await connectDedupeIndex(options.redisDedupeUrl, "dedupe Redis (--redisDedupeUrl)", { failFast: true })
      : redis.isCluster && options.redisStoreUrl
        ? await connectDedupeIndex(options.redisStoreUrl, "dedupe index Redis (the --redisStoreUrl cluster)", { failFast: true })
        : await connectRedis(connectionUrl(redis as Redis), "dedupe index Redis", { failFast: true, giveUp: serverGone.signal });
    const dedupe = new DedupeIndex(dedupeRedis, options.crawlId, options.dedupeFlags.concurrent);
    await dedupe.registerCrawl();
    liveness = new Liveness(membership, (message) => stop.fatal(message));
    await liveness.start();
    const state = new Frontier(redis, membership);
    await state.setStatus("running");
    const reaped = await membership.reapLocalDeadProcesses(state);
    if (reaped.length) logger.info("crawl", "taking over from crawler processes of this machine that died", { processes: reaped });
    const slots = new WriterSlots(redis, membership, paths.archive);
    const slot = await slots.claim();
    return { processId, redis, dedupe, membership, liveness, state, slots, slot, close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function openStateRedis(redisStoreUrl: string | null, dataDir: string, serverGone: AbortSignal, debugAccess: boolean): Promise<{ redis: Redis | Cluster; embedded: EmbeddedRedis | null }> {
  if (redisStoreUrl && debugAccess) logger.warn("redis", "--debugAccessRedis changes nothing with --redisStoreUrl: there is no embedded redis-server to open up");
  // Any node of a Redis Cluster will do: the crawl state is then spread over the cluster (src/state/stateKeys.ts).
  if (redisStoreUrl) return { redis: (await connectMaybeCluster(redisStoreUrl, "crawl-state Redis (--redisStoreUrl)")).client, embedded: null };
  const embedded = new EmbeddedRedis({ dataDir, persist: true, debugAccess });
  // Never in a log file nor a state file: the password of an opened server is for the operator's eyes only.
  if (embedded.password) registerSecrets([embedded.password]);
  const url = await embedded.start();
  logger.info("redis", "embedded redis-server started", { url: redactUrl(url), dataDir });
  if (debugAccess) {
    const everywhere = embedded.host === "0.0.0.0" || embedded.host === "::";
    logger.warn("redis", `--debugAccessRedis: the embedded redis-server listens on ${everywhere ? "every interface" : embedded.host} port ${embedded.port}, with a password (printed once on stderr, in no file)`);
    const reachAt = everywhere ? hostname() : embedded.host.includes(":") ? `[${embedded.host}]` : embedded.host;
    logger.toOperator("redis", `--debugAccessRedis: connect with redis-cli -u redis://default:${embedded.password}@${reachAt}:${embedded.port}/0`);
  }
  try {
    return { redis: await connectRedis(url, "embedded redis-server", { giveUp: serverGone }), embedded };
  } catch (err) {
    await embedded.stop();
    throw err;
  }
}
