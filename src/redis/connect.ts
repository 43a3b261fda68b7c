import { Redis } from "ioredis";
import { withTimeout } from "../util/deadline.js";
import { evalScriptsBySha } from "./scripts.js";

export class RedisUnreachableError extends Error {}

/** A command refused at once because too many already wait for a Redis that is away. */
export class RedisBackloggedError extends Error {}

/**
 * While the server is away, commands wait for it (ioredis's offline queue, which has no bound of its
 * own). The crawler's callers are few and each awaits its command, so this many waiting means the outage
 * has lasted long enough for something to pile up: further commands fail at once, so memory stays bounded.
 */
export const MAX_WAITING_COMMANDS = 10_000;

/**
 * Connect to a Redis URL and check it answers. Commands made later retry with backoff while the
 * server is briefly away (restart), instead of failing the crawl.
 */
export async function connectRedis(
  url: string,
  what: string,
  options: { connectTimeoutMs?: number; failFast?: boolean; giveUp?: AbortSignal; maxWaitingCommands?: number } = {},
): Promise<Redis> {
  const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    // giveUp: the server is known to be gone for good (the embedded one died): at the next reconnect
    // attempt the client ends, and every command waiting for it fails instead of waiting forever.
    retryStrategy: (times) => (options.giveUp?.aborted ? null : Math.min(100 * 2 ** Math.min(times, 6), 5000)),
    // failFast: while the server is away, commands fail at once instead of queueing (the caller has a
    // fallback, e.g. dedupe writes the full response); it still reconnects in the background.
    ...(options.failFast
      ? { maxRetriesPerRequest: 0, enableOfflineQueue: false, commandTimeout: 3000 }
      : { maxRetriesPerRequest: null }),
  });
  if (!options.failFast) boundWaitingCommands(redis, what, options.maxWaitingCommands ?? MAX_WAITING_COMMANDS);
  evalScriptsBySha(redis);
  let lastError = "";
  redis.on("error", (err: Error) => (lastError = err.message));
  try {
    // Offline queue off means even the first command must wait for "ready".
    await withTimeout(redis.connect(), connectTimeoutMs, `no answer within ${connectTimeoutMs} ms`);
    if (redis.status !== "ready") await withTimeout(new Promise((r) => redis.once("ready", r)), connectTimeoutMs, `no answer within ${connectTimeoutMs} ms`);
    await withTimeout(redis.ping(), connectTimeoutMs, `no answer within ${connectTimeoutMs} ms`);
  } catch (err) {
    redis.disconnect();
    const reason = lastError || (err instanceof Error ? err.message : String(err));
    throw new RedisUnreachableError(`cannot reach ${what} at ${redactUrl(url)}: ${reason}`);
  }
  return redis;
}

/** Refuse commands sent while the connection is not ready once `max` such commands are still waiting. */
function boundWaitingCommands(redis: Redis, what: string, max: number): void {
  let waiting = 0;
  // ioredis sends a waiting command again once reconnected: it is counted once. Its own handshake
  // commands (ready check, SELECT) go out while the status is "connect": never refused.
  const counted = new WeakSet<object>();
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    if (redis.status === "ready" || redis.status === "connect" || counted.has(command)) return send(command, stream);
    if (waiting >= max) {
      command.reject(new RedisBackloggedError(`${what} has been unreachable too long: ${waiting} commands are waiting for it`));
      return command.promise;
    }
    waiting += 1;
    counted.add(command);
    const settled = () => {
      waiting -= 1;
    };
    command.promise.then(settled, settled);
    return send(command, stream);
  };
}

/** The URL an open connection was made with (to open a second connection to the same server). */
export function connectionUrl(redis: Redis): string {
  const { host, port, db, password, username } = redis.options;
  const auth = password ? `${encodeURIComponent(username ?? "")}:${encodeURIComponent(password)}@` : "";
  return `redis://${auth}${host}:${port}/${db ?? 0}`;
}

/** Hide a password in a Redis URL before it goes into a log or an error. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.href;
  } catch {
    return url;
  }
}
