import { hostname } from "node:os";
import type { Redis } from "ioredis";
import { isPidAlive } from "../util/process.js";
import { crawlStateKeys, type CrawlStateKeys } from "./keys.js";

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
  reason: string;
  attempts: number;
}

// Depth-major order: all pages of depth d before depth d+1, insertion order within a depth.
const DEPTH_WEIGHT = 1e12;

const ENQUEUE_LUA = `
-- KEYS: seen, queue, queueSeq; ARGV: url, pageJson, depth, limit
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
-- KEYS: pending, leases, done; ARGV: url, owner
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 1
`;

// Give a page back to the queue (interrupted) or count a failed attempt: give up, or retry after a
// backoff that doubles with each attempt (a server that is down for a moment gets that moment).
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
    redis.call('RPUSH', KEYS[5], cjson.encode({url=url, depth=page.depth, reason=ARGV[5], attempts=attempts}))
    return 2
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local delay = math.min(tonumber(ARGV[6]) * 2 ^ (attempts - 1), tonumber(ARGV[7]))
  redis.call('ZADD', KEYS[7], now + delay, json)
  return 1
end
local seq = redis.call('INCR', KEYS[6])
redis.call('ZADD', KEYS[3], page.depth * ${DEPTH_WEIGHT} + seq, json)
return 1
`;

const STORED = "stored";

/** Field of a stored exchange in the claims hash: "<status> <method> <url>[ <request body digest>]". */
function exchangeField(status: number, method: string, url: string, requestDigest?: string): string {
  return requestDigest ? `${status} ${method} ${url} ${requestDigest}` : `${status} ${method} ${url}`;
}

// A claim is "stored" (final) or the id of the process writing it (provisional). Taking over the
// provisional claim of a process whose heartbeat is gone fences that process.
const CLAIM_LUA = `
-- KEYS: storedExchanges, fenced; ARGV: claim, owner, heartbeatPrefix
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current == '${STORED}' then return 0 end
if current == ARGV[2] then return 0 end
if current then
  if redis.call('EXISTS', ARGV[3] .. current) == 1 then return 0 end
  redis.call('SADD', KEYS[2], current)
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

// Confirm only our own claim: one taken over from us (we were fenced) stays with its new owner.
const CONFIRM_LUA = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '${STORED}')
return 1
`;

const UNCLAIM_LUA = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
`;

// Declare a process dead, atomically with the check that its heartbeat is gone.
const FENCE_LUA = `
-- KEYS: heartbeat, fenced; ARGV: owner
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`;

// Renew our heartbeat, unless we were taken for dead meanwhile.
const HEARTBEAT_LUA = `
-- KEYS: heartbeat, fenced; ARGV: owner, ttlMs, now
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'PX', tonumber(ARGV[2]))
return 1
`;

// Per-host pacing shared by all processes: 0 = go now, else milliseconds to wait.
const HOST_TURN_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local next = tonumber(redis.call('GET', KEYS[1]) or '0')
if next > now then return next - now end
redis.call('SET', KEYS[1], now + tonumber(ARGV[1]), 'PX', tonumber(ARGV[1]) * 2 + 1000)
return 0
`;

// Take on reading the sitemaps unless they were read, or a live process is reading them.
const SITEMAP_CLAIM_LUA = `
-- KEYS: sitemapRead; ARGV: owner, heartbeatPrefix
local current = redis.call('GET', KEYS[1])
if current == 'done' then return 'done' end
if current and current ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. current) == 1 then return 'busy' end
redis.call('SET', KEYS[1], ARGV[1])
return 'claimed'
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
}

/** First retry after this long, doubling with each further attempt up to RETRY_BACKOFF_MAX_MS. */
export const RETRY_BACKOFF_BASE_MS = 1000;
export const RETRY_BACKOFF_MAX_MS = 30_000;

/**
 * The shared crawl state: queue, seen set, leased pending pages and counters, all in Redis so that
 * several crawler processes can work on one crawl. Each process has a heartbeat; pages leased by a
 * process whose heartbeat expired go back to the queue.
 */
export class CrawlState {
  readonly keys: CrawlStateKeys;

  constructor(
    private readonly redis: Redis,
    readonly crawlId: string,
    readonly processId: string,
    private readonly heartbeatMs = 15_000,
    private readonly retryBackoffBaseMs = RETRY_BACKOFF_BASE_MS,
  ) {
    this.keys = crawlStateKeys(crawlId);
  }

  /** Queue a page unless it was seen before or the page limit is reached. */
  async enqueue(page: QueuedPage, limit: number): Promise<"queued" | "seen" | "limit"> {
    const k = this.keys;
    const result = (await this.redis.eval(
      ENQUEUE_LUA, 3, k.seen, k.queue, k.queueSeq, page.url, JSON.stringify(page), page.depth, limit,
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

  async markDone(url: string): Promise<void> {
    const k = this.keys;
    await this.redis.eval(FINISH_LUA, 3, k.pending, k.leases, k.done, url, this.processId);
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

  /** Renew this process's heartbeat; "fenced" when others took it for dead (it must stop at once). */
  async heartbeat(): Promise<"renewed" | "fenced"> {
    const result = await this.redis.eval(
      HEARTBEAT_LUA, 2, this.keys.processHeartbeat(this.processId), this.keys.fenced, this.processId, this.heartbeatMs, Date.now(),
    );
    return result === 1 ? "renewed" : "fenced";
  }

  get heartbeatTtlMs(): number {
    return this.heartbeatMs;
  }

  /**
   * Take a process for dead if its heartbeat is gone: from then on it can never renew it, so whatever
   * of its work is taken over (leases, claims, writer slot, open WARC) it will not touch again.
   */
  async fenceIfDead(owner: string): Promise<boolean> {
    if (owner === this.processId) return false;
    return (await this.redis.eval(FENCE_LUA, 2, this.keys.processHeartbeat(owner), this.keys.fenced, owner)) === 1;
  }

  async clearHeartbeat(): Promise<void> {
    await this.redis.del(this.keys.processHeartbeat(this.processId));
  }

  /**
   * Return pages leased by processes that are gone (heartbeat expired) to the queue, counting one attempt.
   * Returns the URLs recovered.
   */
  async recoverAbandoned(maxRetries: number): Promise<string[]> {
    const leases = await this.redis.hgetall(this.keys.leases);
    const owners = [...new Set(Object.values(leases))].filter((o) => o !== this.processId);
    if (!owners.length) return [];
    const alive = await this.redis.mget(owners.map((o) => this.keys.processHeartbeat(o)));
    const dead = new Set<string>();
    for (const [i, owner] of owners.entries()) if (alive[i] === null && (await this.fenceIfDead(owner))) dead.add(owner);
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

  /**
   * Processes of this machine that are gone (killed, crashed) need not wait for their heartbeat to
   * expire: drop it now, so their leases and writer slots are taken over at once.
   */
  async reapLocalDeadProcesses(): Promise<string[]> {
    const owners = new Set([...Object.values(await this.redis.hgetall(this.keys.leases)), ...Object.values(await this.redis.hgetall(this.keys.writers))]);
    const reaped: string[] = [];
    for (const owner of owners) {
      const local = parseProcessId(owner);
      if (!local || local.host !== hostname() || owner === this.processId || isPidAlive(local.pid)) continue;
      await this.redis.del(this.keys.processHeartbeat(owner));
      if (await this.fenceIfDead(owner)) reaped.push(owner);
    }
    return reaped;
  }

  async counts(): Promise<CrawlCounts> {
    const k = this.keys;
    const [queued, delayed, pending, done, failed, seen, failedAttempts, skippedRobots] = (await this.redis
      .multi()
      .zcard(k.queue)
      .zcard(k.retryDelayed)
      .hlen(k.pending)
      .scard(k.done)
      .llen(k.failed)
      .scard(k.seen)
      .get(k.failedAttempts)
      .scard(k.robotsSkipped)
      .exec())!.map(([err, value]) => {
      if (err) throw err;
      return Number(value ?? 0);
    });
    return { queued: queued + delayed, pending, done, failed, seen, failedAttempts, skippedRobots };
  }

  async failedPages(): Promise<FailedPage[]> {
    return (await this.redis.lrange(this.keys.failed, 0, -1)).map((s) => JSON.parse(s) as FailedPage);
  }


  /**
   * Claim the right to store an exchange: true the first time a (status, method, url) is seen in this
   * crawl, false afterwards, so identical later fetches are skipped. A claim stays provisional until
   * confirmExchange(); a provisional claim of a process that died (its record may have been cut off
   * with its WARC) can be taken over.
   */
  async claimExchange(status: number, method: string, url: string, requestDigest?: string): Promise<boolean> {
    const k = this.keys;
    const result = (await this.redis.eval(
      CLAIM_LUA, 2, k.storedExchanges, k.fenced, exchangeField(status, method, url, requestDigest), this.processId, k.processHeartbeat(""),
    )) as number;
    return result === 1;
  }

  /** The exchange's records are safely in the WARC. */
  async confirmExchange(status: number, method: string, url: string, requestDigest?: string): Promise<void> {
    await this.redis.eval(CONFIRM_LUA, 1, this.keys.storedExchanges, exchangeField(status, method, url, requestDigest), this.processId);
  }

  /** Whether the exchange's records are in a WARC already (a provisional claim does not count). */
  async isExchangeStored(status: number, method: string, url: string): Promise<boolean> {
    return (await this.redis.hget(this.keys.storedExchanges, exchangeField(status, method, url))) === STORED;
  }

  /** Undo a claim whose records could not be written, so a later fetch may store it. */
  async unclaimExchange(status: number, method: string, url: string, requestDigest?: string): Promise<void> {
    await this.redis.eval(UNCLAIM_LUA, 1, this.keys.storedExchanges, exchangeField(status, method, url, requestDigest), this.processId);
  }

  /** Ask for a turn to load a page from `host`; returns 0 (go) or how many ms to wait before asking again. */
  async hostTurn(host: string, intervalMs: number): Promise<number> {
    return (await this.redis.eval(HOST_TURN_LUA, 1, this.keys.hostTurn(host), intervalMs)) as number;
  }


  /** Count a page robots.txt keeps the crawler from; true the first time this URL is counted. */
  async addRobotsSkipped(url: string): Promise<boolean> {
    return (await this.redis.sadd(this.keys.robotsSkipped, url)) === 1;
  }

  /**
   * The sitemaps are read once per crawl, by one process: "claimed" means this process reads them now
   * (also when the one that started died before finishing), "busy" that a live process does, "done"
   * that they were read.
   */
  async claimSitemapRead(): Promise<"claimed" | "busy" | "done"> {
    return (await this.redis.eval(SITEMAP_CLAIM_LUA, 1, this.keys.sitemapRead, this.processId, this.keys.processHeartbeat(""))) as
      "claimed" | "busy" | "done";
  }

  async finishSitemapRead(): Promise<void> {
    await this.redis.set(this.keys.sitemapRead, "done");
  }

  /** Whether a live process is still reading the sitemaps (their pages may still be queued). */
  async sitemapReadInProgress(): Promise<boolean> {
    const owner = await this.redis.get(this.keys.sitemapRead);
    if (owner === null || owner === "done") return false;
    return owner === this.processId || (await this.redis.exists(this.keys.processHeartbeat(owner))) === 1;
  }

  async setStatus(status: string): Promise<void> {
    await this.redis.set(this.keys.status, status);
  }

}

/** Process ids are "<host>-<pid>-<random>"; the host may itself contain dashes. */
export function newProcessId(random: string): string {
  return `${hostname()}-${process.pid}-${random}`;
}

function parseProcessId(id: string): { host: string; pid: number } | null {
  const match = /^(.*)-(\d+)-[0-9a-f]+$/.exec(id);
  return match ? { host: match[1], pid: Number(match[2]) } : null;
}

