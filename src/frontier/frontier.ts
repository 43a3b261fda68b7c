import type { Cluster, Redis } from "ioredis";
import type { CrawlStateKeys, FrontierShardKeys } from "../state/stateKeys.js";
import type { LeaseHolders, Membership } from "../state/membership/membership.js";
import { fingerprint, packEntry, shardOf, unpackEntry, type FailedPage, type QueuedPage } from "./frontierEntry.js";
import { ADD_SEEN_LUA, ENQUEUE_LUA, RESERVE_LUA, FINISH_LUA, PUSH_LUA, RATE_LIMITED_LUA, RELEASE_LUA, SHARD_COUNTS_LUA, SKIP_LUA, TAKE_LUA } from "./frontierScripts.js";
import { openFrontier } from "./frontierShards.js";
import { RecentlyUsed } from "../util/recentlyUsed.js";

export type { FailedPage, QueuedPage } from "./frontierEntry.js";

/** The crawl-state Redis: one server, or a Redis Cluster (each script's keys share one slot). */
export type StateRedis = Redis | Cluster;

/** A page to queue and its key (scope/urls.ts crawlKey). */
export interface PageToQueue {
  page: QueuedPage;
  key?: string;
}

export type EnqueueResult = "queued" | "seen" | "limit";

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

/** Pages per enqueue script call: a page of 100,000 links must not hold Redis for one long script. */
const ENQUEUE_BATCH = 1000;
/** Page keys a process remembers as seen (every page of a site links the same menu: asked about on every page). */
const KNOWN_SEEN = 50_000;

export interface FrontierOptions {
  /** Shards of a new crawl's frontier (a crawl keeps the number it started with). Default: 1, or 32 on a cluster. */
  shards?: number;
}

/**
 * The crawl's frontier, shared through Redis by every crawler process on the crawl: the queue (in
 * depth-major order within a shard), the seen set and page limit, pages leased to a process while it
 * crawls them, retries waiting out their backoff, finished and failed pages, and the counts over all of
 * them. Pages are spread over shards by host (stateKeys.ts frontierShard; one shard on a plain Redis),
 * each shard's keys in one cluster slot. A lease is held by a process id (Membership); pages of a process
 * taken for dead go back to the queue (the membership asks who holds leases: leaseHolders).
 */
export class Frontier implements LeaseHolders {
  readonly keys: CrawlStateKeys;
  readonly crawlId: string;
  private readonly processId: string;
  private readonly clustered: boolean;
  private opened?: Promise<FrontierShardKeys[]>;
  /** "<shard> <key>" of pages seen in this crawl: a shard's seen sets only grow, so a key seen is not asked again. */
  private readonly knownSeen = new RecentlyUsed<string, true>(KNOWN_SEEN);
  /** The shard take() tries first: the last one that had a page. */
  private nextShard = 0;

  constructor(
    private readonly redis: StateRedis,
    private readonly membership: Membership,
    private readonly retryBackoffBaseMs = RETRY_BACKOFF_BASE_MS,
    private readonly options: FrontierOptions = {},
  ) {
    this.keys = membership.keys;
    this.crawlId = membership.crawlId;
    this.processId = membership.processId;
    this.clustered = redis.isCluster;
  }

  /** The processes holding page leases (Membership.reapLocalDeadProcesses asks). */
  async leaseHolders(): Promise<string[]> {
    return (await this.allLeases()).map(([, owner]) => owner);
  }

  /** The frontier's shards (the first call settles their number and moves an older build's frontier in). */
  async shards(): Promise<FrontierShardKeys[]> {
    this.opened ??= openFrontier(this.redis, this.keys, this.options.shards ?? (this.clustered ? 32 : 1)).catch((err: unknown) => {
      this.opened = undefined;
      throw err;
    });
    return this.opened;
  }

  private async shardOfUrl(url: string): Promise<FrontierShardKeys> {
    const shards = await this.shards();
    return shards[shardOf(url, shards.length)]!;
  }

  /**
   * Queue a page unless its key (scope/urls.ts crawlKey: the page whatever its query order) was seen
   * before or the page limit is reached. The queue keeps the URL as found: that one is loaded.
   */
  async enqueue(page: QueuedPage, limit: number, key = page.url): Promise<EnqueueResult> {
    return (await this.enqueueMany([{ page, key }], limit))[0]!;
  }

  /** Queue a batch of pages (a page's links): one script call per shard they fall in. */
  async enqueueMany(items: PageToQueue[], limit: number): Promise<EnqueueResult[]> {
    const shards = await this.shards();
    const results: EnqueueResult[] = new Array<EnqueueResult>(items.length);
    const groups = new Map<number, number[]>();
    items.forEach((item, i) => {
      const shard = shardOf(item.page.url, shards.length);
      if (this.knownSeen.get(`${shard} ${item.key ?? item.page.url}`)) {
        results[i] = "seen";
        return;
      }
      const group = groups.get(shard) ?? [];
      group.push(i);
      groups.set(shard, group);
    });
    // Shards in parallel; within one, calls of at most ENQUEUE_BATCH pages in order (a page's first link is queued first).
    await Promise.all([...groups].map(async ([shard, indexes]) => {
      for (let at = 0; at < indexes.length; at += ENQUEUE_BATCH) {
        const batch = indexes.slice(at, at + ENQUEUE_BATCH);
        const codes = await this.enqueueInShard(shards[shard]!, batch.map((i) => items[i]!), limit);
        batch.forEach((i, j) => {
          results[i] = codes[j] === 1 ? "queued" : codes[j] === 0 ? "seen" : "limit";
          if (results[i] !== "limit") this.knownSeen.set(`${shard} ${items[i]!.key ?? items[i]!.page.url}`, true);
        });
      }
    }));
    return results;
  }

  private async enqueueInShard(shard: FrontierShardKeys, items: PageToQueue[], limit: number): Promise<number[]> {
    const perPage = items.flatMap(({ page, key }) => {
      const fp = fingerprint(key ?? page.url);
      return [fp.member, fp.bucket, packEntry(page)];
    });
    const run = (counter: string | null, budget: number, mode: "add" | "probe") => {
      const keys = counter ? [shard.meta, shard.depths, counter] : [shard.meta, shard.depths];
      return this.redis.eval(ENQUEUE_LUA, keys.length, ...keys, shard.queueAtDepth, shard.seenBucket, limit, budget, mode, ...perPage) as Promise<number[]>;
    };
    // A plain Redis checks the limit in the same script; a cluster's shards are on other nodes than the
    // crawl-wide counter: reserve places there first, then give back those not used.
    if (!this.clustered) return run(this.keys.frontierQueuedEver, -1, "add");
    if (limit <= 0) {
      const codes = await run(null, -1, "add");
      const added = codes.filter((c) => c === 1).length;
      if (added) await this.redis.incrby(this.keys.frontierQueuedEver, added);
      return codes;
    }
    const unseen = (await run(null, -1, "probe")).filter((c) => c === 1).length;
    if (!unseen) return items.map(() => 0);
    const granted = (await this.redis.eval(RESERVE_LUA, 1, this.keys.frontierQueuedEver, unseen, limit)) as number;
    const codes = await run(null, granted, "add");
    const unused = granted - codes.filter((c) => c === 1).length;
    if (unused > 0) await this.redis.decrby(this.keys.frontierQueuedEver, unused);
    return codes;
  }

  /**
   * Which of these pages (a URL as it would be queued, and its key) a link to would still queue: not seen yet, and the
   * page limit (0: none) not reached. Asks only: nothing is queued or marked seen.
   */
  async wouldQueue(items: { url: string; key: string }[], limit: number): Promise<boolean[]> {
    if (!items.length) return [];
    if (limit > 0 && Number((await this.redis.get(this.keys.frontierQueuedEver)) ?? 0) >= limit) return items.map(() => false);
    const shards = await this.shards();
    const results: boolean[] = new Array<boolean>(items.length).fill(false);
    const groups = new Map<number, number[]>();
    items.forEach((item, i) => {
      const shard = shardOf(item.url, shards.length);
      if (this.knownSeen.get(`${shard} ${item.key}`)) return;
      const group = groups.get(shard) ?? [];
      group.push(i);
      groups.set(shard, group);
    });
    await Promise.all([...groups].map(async ([n, indexes]) => {
      const shard = shards[n]!;
      for (let at = 0; at < indexes.length; at += ENQUEUE_BATCH) {
        const batch = indexes.slice(at, at + ENQUEUE_BATCH);
        const perKey = batch.flatMap((i) => {
          const fp = fingerprint(items[i]!.key);
          return [fp.member, fp.bucket, ""];
        });
        const codes = (await this.redis.eval(ENQUEUE_LUA, 2, shard.meta, shard.depths, shard.queueAtDepth, shard.seenBucket, 0, -1, "probe", ...perKey)) as number[];
        const probed = new Set<string>();
        batch.forEach((i, j) => {
          results[i] = codes[j] === 1;
          // A key asked twice in one batch is answered 0 the second time, seen or not.
          if (codes[j] === 0 && !probed.has(items[i]!.key)) this.knownSeen.set(`${n} ${items[i]!.key}`, true);
          probed.add(items[i]!.key);
        });
      }
    }));
    return results;
  }

  /** Take the next page and lease it to this process; null when the queue is empty. */
  async take(): Promise<QueuedPage | null> {
    const shards = await this.shards();
    for (let tried = 0; tried < shards.length; tried++) {
      const n = (this.nextShard + tried) % shards.length;
      const s = shards[n]!;
      const entry = (await this.redis.eval(TAKE_LUA, 6, s.meta, s.depths, s.delayed, s.pending, s.leases, s.snapshotHold, s.queueAtDepth, this.processId)) as string | null;
      if (entry) {
        this.nextShard = n;
        return unpackEntry(entry);
      }
    }
    return null;
  }

  /**
   * The page is crawled (only while the lease is ours: false otherwise), listed in WACZ `listedIn`:
   * the one pages list that keeps it at packaging.
   */
  async markDone(url: string, listedIn = ""): Promise<boolean> {
    const s = await this.shardOfUrl(url);
    return (await this.redis.eval(FINISH_LUA, 4, s.pending, s.leases, s.done, s.listedPages, url, this.processId, listedIn)) === 1;
  }

  /** The page was taken but is not crawled (only while the lease is ours): a duplicate, or past the page limit (--dedupePagesMinDepth). */
  async markSkipped(url: string, reason: "duplicate" | "pageLimit" | "seedPageLimit" | "seedSizeLimit" | "hostPageLimit"): Promise<boolean> {
    const s = await this.shardOfUrl(url);
    return (await this.redis.eval(SKIP_LUA, 3, s.pending, s.leases, s.skippedPages, url, this.processId, reason)) === 1;
  }

  /** Pages taken but not crawled (markSkipped), by reason. */
  async skippedCounts(): Promise<Record<"duplicate" | "pageLimit", number>> {
    const reasons = (await Promise.all((await this.shards()).map((s) => this.redis.hvals(s.skippedPages)))).flat();
    return { duplicate: reasons.filter((r) => r === "duplicate").length, pageLimit: reasons.filter((r) => r === "pageLimit").length };
  }

  /** For each URL: the WACZ whose pages list keeps it (null: none named; "" for a page crawled before this was kept). */
  async listedIn(urls: string[], viaAlias = true): Promise<(string | null)[]> {
    if (!urls.length) return [];
    const aliasOf = viaAlias ? await this.redis.hmget(this.keys.listingAliases, ...urls) : [];
    return Promise.all(urls.map(async (url, i) => {
      const s = await this.shardOfUrl(url);
      const [named, done] = await Promise.all([this.redis.hget(s.listedPages, url), this.redis.sismember(s.done, url)]);
      const page = aliasOf[i]; // listed as another name of that page (addSeenAlias): kept where it is
      return named ?? (done === 1 ? "" : page ? ((await this.listedIn([page], false))[0] ?? null) : null);
    }));
  }

  /** Count a failed attempt; returns "retry" when the page went back to the queue, "failed" when given up. */
  async markFailed(url: string, reason: string, maxRetries: number): Promise<"retry" | "failed" | "not-owner"> {
    const result = await this.release(url, this.processId, "failed", maxRetries, reason);
    return result === 2 ? "failed" : result === 1 ? "retry" : "not-owner";
  }

  /** How many attempts at this page have failed so far. */
  async failedAttemptsOf(url: string): Promise<number> {
    return Number((await this.redis.hget((await this.shardOfUrl(url)).retries, url)) ?? 0);
  }

  /**
   * A page's key that is known without being queued (the URL a seed redirected to, already crawled
   * with the seed): links to it are "seen", and it takes no place under the page limit. `listedFor`: the
   * page is listed under this URL too; packaging keeps that listing in the WACZ that keeps the page's.
   */
  async addSeenAlias(key: string, listedFor?: { url: string; pageUrl: string }): Promise<void> {
    await this.redis.sadd(this.keys.seenAliases, key);
    if (listedFor) await this.redis.hset(this.keys.listingAliases, listedFor.url, listedFor.pageUrl);
    await this.addSeen([key]);
  }

  /** Mark page keys seen without queueing them or counting them under the limit; returns how many were new. */
  async addSeen(keys: string[]): Promise<number> {
    const shards = await this.shards();
    const groups = new Map<number, string[]>();
    for (const key of keys) {
      const n = shardOf(key, shards.length);
      groups.set(n, [...(groups.get(n) ?? []), key]);
    }
    const added = await Promise.all([...groups].map(([n, group]) => {
      const args = group.flatMap((key) => {
        const fp = fingerprint(key);
        return [fp.member, fp.bucket];
      });
      return this.redis.eval(ADD_SEEN_LUA, 1, shards[n]!.meta, shards[n]!.seenBucket, ...args) as Promise<number>;
    }));
    return added.reduce((a, b) => a + b, 0);
  }

  /** Queue pages as they are, without a seen check (a loaded state's queue), in order; `retry`: failed attempts so far. */
  async pushPages(pages: { page: QueuedPage; retry: number }[]): Promise<void> {
    const shards = await this.shards();
    for (let i = 0; i < pages.length; i += 500) {
      const batch = pages.slice(i, i + 500);
      const byShard = new Map<number, string[]>();
      for (const { page, retry } of batch) {
        const n = shardOf(page.url, shards.length);
        byShard.set(n, [...(byShard.get(n) ?? []), packEntry(page)]);
        if (retry > 0) await this.redis.hset(shards[n]!.retries, page.url, retry);
      }
      for (const [n, entries] of byShard) {
        const s = shards[n]!;
        await this.redis.eval(PUSH_LUA, 2, s.meta, s.depths, s.queueAtDepth, ...entries);
      }
    }
  }

  /** Record pages as failed (a loaded state's pages whose retries are used up). */
  async addFailed(pages: FailedPage[]): Promise<void> {
    for (const page of pages) await this.redis.rpush((await this.shardOfUrl(page.url)).failed, JSON.stringify(page));
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
    const s = await this.shardOfUrl(url);
    const [code, delayMs] = (await this.redis.eval(
      RATE_LIMITED_LUA, 6, s.pending, s.leases, s.rateLimitRetries, s.meta, s.failed, s.delayed,
      url, this.processId, retryAfterMs === null ? -1 : Math.max(0, Math.round(retryAfterMs)), limits.maxRetries, reason, limits.backoffBaseMs, limits.capMs,
    )) as [number, number];
    return { outcome: code === 2 ? "failed" : code === 1 ? "retry" : "not-owner", delayMs };
  }

  /** Put a leased page back, due in `delayMs`, without counting an attempt (its host is backed off). */
  async defer(url: string, delayMs: number): Promise<void> {
    await this.release(url, this.processId, "defer", 0, "", Math.max(0, Math.round(delayMs)));
  }

  /** Hand a leased page back to the queue without counting an attempt (interrupted crawl). */
  async handBack(url: string): Promise<void> {
    await this.release(url, this.processId, "handback", 0, "");
  }

  private async release(url: string, owner: string, mode: string, maxRetries: number, reason: string, delayMs = this.retryBackoffBaseMs): Promise<number> {
    const s = await this.shardOfUrl(url);
    return (await this.redis.eval(
      RELEASE_LUA, 7, s.pending, s.leases, s.retries, s.failed, s.delayed, s.meta, s.depths,
      url, owner, mode, maxRetries, reason, delayMs, RETRY_BACKOFF_MAX_MS, s.queueAtDepth,
    )) as number;
  }

  /** Every lease of every shard: [url, owner]. */
  private async allLeases(): Promise<[string, string][]> {
    const all = await Promise.all((await this.shards()).map((s) => this.redis.hgetall(s.leases)));
    return all.flatMap((leases) => Object.entries(leases));
  }

  /**
   * Return pages leased by processes that are gone (heartbeat expired, fenced now) to the queue,
   * counting one attempt. Returns the URLs recovered.
   */
  async recoverAbandoned(maxRetries: number): Promise<string[]> {
    const leases = await this.allLeases();
    const dead = new Set<string>();
    for (const owner of new Set(leases.map(([, o]) => o))) if (await this.membership.fenceIfDead(owner)) dead.add(owner);
    const recovered: string[] = [];
    for (const [url, owner] of leases) {
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
    const recovered: string[] = [];
    for (const [url, owner] of await this.allLeases()) {
      if (owner !== this.processId || active.has(url)) continue;
      if ((await this.release(url, owner, "failed", maxRetries, "attempt ended without settling its lease")) > 0) recovered.push(url);
    }
    return recovered;
  }

  private async shardFigures(): Promise<number[][]> {
    return Promise.all((await this.shards()).map((s) =>
      this.redis.eval(SHARD_COUNTS_LUA, 5, s.meta, s.delayed, s.pending, s.done, s.failed) as Promise<number[]>));
  }

  /** Milliseconds until the next retry is due; null when no retry waits. */
  async nextRetryDueInMs(): Promise<number | null> {
    // Due times are Redis's clock (TIME in the release script): compare with the same clock.
    const waits = (await this.shardFigures()).filter((f) => f[7]! >= 0).map((f) => Math.max(0, f[7]! - f[8]!));
    return waits.length ? Math.min(...waits) : null;
  }

  /** Count a page robots.txt keeps the crawler from (never queued); true the first time this URL is counted. */
  async addRobotsSkipped(url: string): Promise<boolean> {
    return (await this.redis.sadd(this.keys.robotsSkipped, url)) === 1;
  }

  async counts(): Promise<CrawlCounts> {
    const k = this.keys;
    await this.shards(); // an older build's frontier is moved in first
    const [figures, seen, skippedRobots, blocked] = await Promise.all([
      this.shardFigures(), this.redis.get(k.frontierQueuedEver), this.redis.scard(k.robotsSkipped), this.redis.get(k.blocked),
    ]);
    const sum = (i: number) => figures.reduce((total, f) => total + f[i]!, 0);
    return {
      queued: sum(0) + sum(1), pending: sum(2), done: sum(3), failed: sum(4), seen: Number(seen ?? 0),
      failedAttempts: sum(5), skippedRobots, rateLimited: sum(6), blocked: Number(blocked ?? 0),
    };
  }

  /**
   * Nothing queued or leased in any shard. Shards are read one after another: with several, a page of
   * shard X could queue a link in shard Y (read before) and finish (X read after), so a second pass must
   * agree, with no page settled between the two.
   */
  async frontierEmpty(): Promise<boolean> {
    const pass = async () => {
      const figures = await this.shardFigures();
      const sum = (i: number) => figures.reduce((total, f) => total + f[i]!, 0);
      return { empty: sum(0) + sum(1) + sum(2) === 0, settled: sum(3) + sum(4) + sum(5) + sum(6) };
    };
    const first = await pass();
    if (!first.empty || (await this.shards()).length === 1) return first.empty;
    const second = await pass();
    return second.empty && second.settled === first.settled;
  }

  /** Add `n` requests blocked (--blockRules, --blockAds) to the crawl's count. */
  async countBlocked(n: number): Promise<void> {
    await this.redis.incrby(this.keys.blocked, n);
  }

  async failedPages(): Promise<FailedPage[]> {
    const lists = await Promise.all((await this.shards()).map((s) => this.redis.lrange(s.failed, 0, -1)));
    return lists.flat().map((s) => JSON.parse(s) as FailedPage);
  }

  /** The crawl's status for observers ("running", then how it ended). */
  async setStatus(status: string): Promise<void> {
    await this.redis.set(this.keys.status, status);
  }
}
