import { Redis } from "ioredis";
import { withTimeout } from "../util/process.js";

export class RedisUnreachableError extends Error {}

/**
 * Connect to a Redis URL and check it answers. Commands made later retry with backoff while the
 * server is briefly away (restart), instead of failing the crawl.
 */
export async function connectRedis(
  url: string,
  what: string,
  options: { connectTimeoutMs?: number; failFast?: boolean; giveUp?: AbortSignal } = {},
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
