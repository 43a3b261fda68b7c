import { Redis } from "ioredis";

export class RedisUnreachableError extends Error {}

/**
 * Connect to a Redis URL and check it answers. Commands made later retry with backoff while the
 * server is briefly away (restart), instead of failing the crawl.
 */
export async function connectRedis(url: string, what: string, connectTimeoutMs = 5000): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5000),
  });
  let lastError = "";
  redis.on("error", (err: Error) => (lastError = err.message));
  try {
    await withTimeout(redis.connect(), connectTimeoutMs);
    await withTimeout(redis.ping(), connectTimeoutMs);
  } catch (err) {
    redis.disconnect();
    const reason = lastError || (err instanceof Error ? err.message : String(err));
    throw new RedisUnreachableError(`cannot reach ${what} at ${redactUrl(url)}: ${reason}`);
  }
  return redis;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (v) => (clearTimeout(timer), resolve(v)),
      (e: unknown) => (clearTimeout(timer), reject(e)),
    );
  });
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
