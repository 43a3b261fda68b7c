import type { Redis } from "ioredis";
import type { CrawlStateKeys } from "./stateKeys.js";
import type { Membership } from "./membership/membership.js";

/** A page waiting in, or taken from, the shared queue. */
export interface QueuedPage {
  url: string;
  depth: number;
  /** Index of the seed whose scope this page belongs to. */
  seedId: number;
  /** Links followed outside the seed's scope to reach this page. */
  extraHops: number;
}

export interface FailedPage {
  url: string;
  depth: number;
  /** The page's seed and hops beyond its scope (not kept by failures recorded before these were). */
  seedId?: number;
  extraHops?: number;
  reason: string;
  attempts: number;
}

// Depth-major order: all pages of depth d before depth d+1, insertion order within a depth.
const DEPTH_WEIGHT = 1e12;

const ENQUEUE_LUA = `
-- KEYS: seen, queue, queueSeq, seenAliases; ARGV: key, pageJson, depth, limit
if redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1 then return 0 end
local limit = tonumber(ARGV[4])
if limit > 0 and redis.call('SCARD', KEYS[1]) >= limit then return -1 end
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
local seq = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], tonumber(ARGV[3]) * ${DEPTH_WEIGHT} + seq, ARGV[2])
return 1
`;

// Retries that are due move back into the queue first, so they keep their depth-major place.
const TAKE_LUA = `
-- KEYS: queue, pending, leases, retryDelayed, queueSeq; ARGV: owner
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, json in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 100)) do
  redis.call('ZREM', KEYS[4], json)
  local seq = redis.call('INCR', KEYS[5])
  redis.call('ZADD', KEYS[1], cjson.decode(json).depth * ${DEPTH_WEIGHT} + seq, json)
end
local items = redis.call('ZPOPMIN', KEYS[1])
if #items == 0 then return false end
local page = cjson.decode(items[1])
redis.call('HSET', KEYS[2], page.url, items[1])
redis.call('HSET', KEYS[3], page.url, ARGV[1])
return {items[1], items[2]}
`;

const FINISH_LUA = `
-- KEYS: pending, leases, done, listedPages; ARGV: url, owner, WACZ listing the page ('' if none)
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[4], ARGV[1], ARGV[3]) end
return 1
`;

const SKIP_LUA = `
-- KEYS: pending, leases, skipped; ARGV: url, owner, reason
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
return 1
`;

// Give a page back to the queue (interrupted), put it back due later (defer: ARGV[6] ms), or count a
// failed attempt: give up, or retry after a backoff that doubles with each attempt (a server that is
// down for a moment gets that moment).
const RELEASE_LUA = `
-- KEYS: pending, leases, queue, retries, failed, queueSeq, retryDelayed, failedAttempts
-- ARGV: url, owner, mode, maxRetries, reason, backoffBaseMs, backoffMaxMs
local url = ARGV[1]
if ARGV[2] ~= '*' and redis.call('HGET', KEYS[2], url) ~= ARGV[2] then return 0 end
local json = redis.call('HGET', KEYS[1], url)
redis.call('HDEL', KEYS[1], url)
redis.call('HDEL', KEYS[2], url)
if not json then return 0 end
local page = cjson.decode(json)
if ARGV[3] == 'failed' then
  redis.call('INCR', KEYS[8])
  local attempts = redis.call('HINCRBY', KEYS[4], url, 1)
  if attempts > tonumber(ARGV[4]) then
    redis.call('RPUSH', KEYS[5], cjson.encode({url=url, depth=page.depth, seedId=page.seedId, extraHops=page.extraHops, reason=ARGV[5], attempts=attempts}))
    return 2
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local delay = math.min(tonumber(ARGV[6]) * 2 ^ (attempts - 1), tonumber(ARGV[7]))
  redis.call('ZADD', KEYS[7], now + delay, json)
  return 1
end
if ARGV[3] == 'defer' then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[7], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[6]), json)
  return 1
end
local seq = redis.call('INCR', KEYS[6])
redis.call('ZADD', KEYS[3], page.depth * ${DEPTH_WEIGHT} + seq, json)
return 1
`;

// A rate-limit answer (--rateLimitStatusCodes) is not a failed attempt: the page waits out the
// server's Retry-After (else a backoff doubling per answer), both capped, and is tried again, until
// --rateLimitMaxRetries (-1: no limit) runs out. Returns {1 retry | 2 failed | 0 not the owner, delay ms}.
const RATE_LIMITED_LUA = `
-- KEYS: pending, leases, rateLimitRetries, rateLimited, failed, retryDelayed
-- ARGV: url, owner, retryAfterMs (-1: none), maxRetries, reason, backoffBaseMs, capMs
local url = ARGV[1]
if redis.call('HGET', KEYS[2], url) ~= ARGV[2] then return {0, 0} end
local json = redis.call('HGET', KEYS[1], url)
redis.call('HDEL', KEYS[1], url)
redis.call('HDEL', KEYS[2], url)
if not json then return {0, 0} end
redis.call('INCR', KEYS[4])
local answers = redis.call('HINCRBY', KEYS[3], url, 1)
local cap = tonumber(ARGV[7])
local delay = tonumber(ARGV[3])
if delay < 0 then delay = tonumber(ARGV[6]) * 2 ^ (answers - 1) end
delay = math.floor(math.min(delay, cap))
local maxRetries = tonumber(ARGV[4])
if maxRetries >= 0 and answers > maxRetries then
  local page = cjson.decode(json)
  redis.call('RPUSH', KEYS[5], cjson.encode({url=url, depth=page.depth, seedId=page.seedId, extraHops=page.extraHops, reason=ARGV[5], attempts=answers}))
  return {2, delay}
end
local t = redis.call('TIME')
redis.call('ZADD', KEYS[6], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + delay, json)
return {1, delay}
`;

export interface CrawlCounts {
  /** Waiting in the queue, including retries waiting out their backoff. */
  queued: number;
  pending: number;
  done: number;
  failed: number;
  seen: number;
  /** Page attempts that failed (each retry counts one, and so does the last, given-up attempt). */
  failedAttempts: number;
  /** Pages not crawled because robots.txt disallows them (--robots). */
  skippedRobots: number;
  /** Rate-limit answers to page loads (--rateLimitStatusCodes): never archived, never a crawled page. */
  rateLimited: number;
  /** Requests blocked by --blockRules / --blockAds, by every process of the crawl. */
  blocked: number;
}

/** First retry after this long, doubling with each further attempt up to RETRY_BACKOFF_MAX_MS. */
export const RETRY_BACKOFF_BASE_MS = 1000;
export const RETRY_BACKOFF_MAX_MS = 30_000;

/**
 * The crawl's frontier, shared through Redis by every crawler process on the crawl: the queue (in
 * depth-major order), the seen set and page limit, pages leased to a process while it crawls them,
 * retries waiting out their backoff, finished and failed pages, and the counts over all of them. A lease
 * is held by a process id (Membership); pages of a process taken for dead go back to the queue.
 */
export class CrawlState {
  readonly keys: CrawlStateKeys;
  readonly crawlId: string;
  private readonly processId: string;

  constructor(
    private readonly redis: Redis,
    private readonly membership: Membership,
    private readonly retryBackoffBaseMs = RETRY_BACKOFF_BASE_MS,
  ) {
    this.keys = membership.keys;
    this.crawlId = membership.crawlId;
    this.processId = membership.processId;
  }

  /**
   * Queue a page unless its key (scope/urls.ts crawlKey: the page whatever its query order) was seen
   * before or the page limit is reached. The queue keeps the URL as found: that one is loaded.
   */
  async enqueue(page: QueuedPage, limit: number, key = page.url): Promise<"queued" | "seen" | "limit"> {
    const k = this.keys;
    const result = (await this.redis.eval(
      ENQUEUE_LUA, 4, k.seen, k.queue, k.queueSeq, k.seenAliases, key, JSON.stringify(page), page.depth, limit,
    )) as number;
    return result === 1 ? "queued" : result === 0 ? "seen" : "limit";
  }

  /** Take the next page and lease it to this process; null when the queue is empty. */
  async take(): Promise<QueuedPage | null> {
    const k = this.keys;
    const result = (await this.redis.eval(TAKE_LUA, 5, k.queue, k.pending, k.leases, k.retryDelayed, k.queueSeq, this.processId)) as
      | [string, string]
      | null;
    return result ? (JSON.parse(result[0]) as QueuedPage) : null;
  }

  /**
   * The page is crawled (only while the lease is ours: false otherwise), listed in WACZ `listedIn`:
   * the one pages list that keeps it at packaging.
   */
  async markDone(url: string, listedIn = ""): Promise<boolean> {
    const k = this.keys;
    return (await this.redis.eval(FINISH_LUA, 4, k.pending, k.leases, k.done, k.listedPages, url, this.processId, listedIn)) === 1;
  }

  /** For each URL: the WACZ whose pages list keeps it (null: none named; "" for a page crawled before this was kept). */
  /** The page was taken but is not crawled (only while the lease is ours): a duplicate, or past the page limit (--dedupePagesMinDepth). */
  async markSkipped(url: string, reason: "duplicate" | "pageLimit" | "seedPageLimit" | "seedSizeLimit" | "hostPageLimit"): Promise<boolean> {
    const k = this.keys;
    return (await this.redis.eval(SKIP_LUA, 3, k.pending, k.leases, k.skippedPages, url, this.processId, reason)) === 1;
  }

  /** Pages taken but not crawled (markSkipped), by reason. */
  async skippedCounts(): Promise<Record<"duplicate" | "pageLimit", number>> {
    const reasons = await this.redis.hvals(this.keys.skippedPages);
    return { duplicate: reasons.filter((r) => r === "duplicate").length, pageLimit: reasons.filter((r) => r === "pageLimit").length };
  }

  async listedIn(urls: string[]): Promise<(string | null)[]> {
    if (!urls.length) return [];
    const named = await this.redis.hmget(this.keys.listedPages, ...urls);
    const pipeline = this.redis.pipeline();
    for (const url of urls) pipeline.sismember(this.keys.done, url);
    const done = (await pipeline.exec()) ?? [];
    return named.map((wacz, i) => wacz ?? (done[i]?.[1] === 1 ? "" : null));
  }

  /** Count a failed attempt; returns "retry" when the page went back to the queue, "failed" when given up. */
  async markFailed(url: string, reason: string, maxRetries: number): Promise<"retry" | "failed" | "not-owner"> {
    const result = await this.release(url, this.processId, "failed", maxRetries, reason);
    return result === 2 ? "failed" : result === 1 ? "retry" : "not-owner";
  }

  /** How many attempts at this page have failed so far. */
  async failedAttemptsOf(url: string): Promise<number> {
    return Number((await this.redis.hget(this.keys.retries, url)) ?? 0);
  }

  /**
   * A page's key that is known without being queued (the URL a seed redirected to, already crawled
   * with the seed): links to it are "seen", and it takes no place under the page limit.
   */
  async addSeenAlias(key: string): Promise<void> {
    await this.redis.sadd(this.keys.seenAliases, key);
  }

  /**
   * The server answered the page with a rate limit: no attempt counted; the page is due again after
   * the server's Retry-After (null: a backoff doubling from `backoffBaseMs`), at most `capMs`, or failed
   * once `maxRetries` such answers (-1: never) are used up. Returns the outcome and the delay used.
   */
  async markRateLimited(
    url: string,
    retryAfterMs: number | null,
    limits: { maxRetries: number; backoffBaseMs: number; capMs: number },
    reason: string,
  ): Promise<{ outcome: "retry" | "failed" | "not-owner"; delayMs: number }> {
    const k = this.keys;
    const [code, delayMs] = (await this.redis.eval(
      RATE_LIMITED_LUA, 6, k.pending, k.leases, k.rateLimitRetries, k.rateLimited, k.failed, k.retryDelayed,
      url, this.processId, retryAfterMs === null ? -1 : Math.max(0, Math.round(retryAfterMs)), limits.maxRetries, reason, limits.backoffBaseMs, limits.capMs,
    )) as [number, number];
    return { outcome: code === 2 ? "failed" : code === 1 ? "retry" : "not-owner", delayMs };
  }

  /** Put a leased page back, due in `delayMs`, without counting an attempt (its host is backed off). */
  async defer(url: string, delayMs: number): Promise<void> {
    const k = this.keys;
    await this.redis.eval(
      RELEASE_LUA, 8, k.pending, k.leases, k.queue, k.retries, k.failed, k.queueSeq, k.retryDelayed, k.failedAttempts,
      url, this.processId, "defer", 0, "", Math.max(0, Math.round(delayMs)), 0,
    );
  }

  /** Hand a leased page back to the queue without counting an attempt (interrupted crawl). */
  async handBack(url: string): Promise<void> {
    await this.release(url, this.processId, "handback", 0, "");
  }

  private async release(url: string, owner: string, mode: string, maxRetries: number, reason: string): Promise<number> {
    const k = this.keys;
    return (await this.redis.eval(
      RELEASE_LUA, 8, k.pending, k.leases, k.queue, k.retries, k.failed, k.queueSeq, k.retryDelayed, k.failedAttempts,
      url, owner, mode, maxRetries, reason, this.retryBackoffBaseMs, RETRY_BACKOFF_MAX_MS,
    )) as number;
  }

  /**
   * Return pages leased by processes that are gone (heartbeat expired, fenced now) to the queue,
   * counting one attempt. Returns the URLs recovered.
   */
  async recoverAbandoned(maxRetries: number): Promise<string[]> {
    const leases = await this.redis.hgetall(this.keys.leases);
    const dead = new Set<string>();
    for (const owner of new Set(Object.values(leases))) if (await this.membership.fenceIfDead(owner)) dead.add(owner);
    const recovered: string[] = [];
    for (const [url, owner] of Object.entries(leases)) {
      if (!dead.has(owner)) continue;
      if ((await this.release(url, owner, "failed", maxRetries, "crawler process died")) > 0) recovered.push(url);
    }
    return recovered;
  }

  /**
   * Pages leased by this very process that none of its workers is loading (an attempt that ended
   * without settling its lease, e.g. Redis failed at that moment): no other process would ever recover
   * them while this one is alive, so count a failed attempt and put them back. `active` must be read
   * right before the call, with no take() in flight.
   */
  async recoverOwnOrphans(active: ReadonlySet<string>, maxRetries: number): Promise<string[]> {
    const leases = await this.redis.hgetall(this.keys.leases);
    const recovered: string[] = [];
    for (const [url, owner] of Object.entries(leases)) {
      if (owner !== this.processId || active.has(url)) continue;
      if ((await this.release(url, owner, "failed", maxRetries, "attempt ended without settling its lease")) > 0) recovered.push(url);
    }
    return recovered;
  }

  /** Milliseconds until the next retry is due; null when no retry waits. */
  async nextRetryDueInMs(): Promise<number | null> {
    // Due times are Redis's clock (TIME in the release script): compare with the same clock.
    const [, dueAt] = await this.redis.zrange(this.keys.retryDelayed, 0, 0, "WITHSCORES");
    if (dueAt === undefined) return null;
    const [sec, micro] = await this.redis.time();
    return Math.max(0, Number(dueAt) - (Number(sec) * 1000 + Math.floor(Number(micro) / 1000)));
  }

  /** Count a page robots.txt keeps the crawler from (never queued); true the first time this URL is counted. */
  async addRobotsSkipped(url: string): Promise<boolean> {
    return (await this.redis.sadd(this.keys.robotsSkipped, url)) === 1;
  }

  async counts(): Promise<CrawlCounts> {
    const k = this.keys;
    const [queued, delayed, pending, done, failed, seen, failedAttempts, skippedRobots, rateLimited, blocked] = (await this.redis
      .multi()
      .zcard(k.queue)
      .zcard(k.retryDelayed)
      .hlen(k.pending)
      .scard(k.done)
      .llen(k.failed)
      .scard(k.seen)
      .get(k.failedAttempts)
      .scard(k.robotsSkipped)
      .get(k.rateLimited)
      .get(k.blocked)
      .exec())!.map(([err, value]) => {
      if (err) throw err;
      return Number(value ?? 0);
    });
    return { queued: queued + delayed, pending, done, failed, seen, failedAttempts, skippedRobots, rateLimited, blocked };
  }

  /** Add `n` requests blocked (--blockRules, --blockAds) to the crawl's count. */
  async countBlocked(n: number): Promise<void> {
    await this.redis.incrby(this.keys.blocked, n);
  }

  async failedPages(): Promise<FailedPage[]> {
    return (await this.redis.lrange(this.keys.failed, 0, -1)).map((s) => JSON.parse(s) as FailedPage);
  }

  /** The crawl's status for observers ("running", then how it ended). */
  async setStatus(status: string): Promise<void> {
    await this.redis.set(this.keys.status, status);
  }
}
