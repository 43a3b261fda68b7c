import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { FailedPage, QueuedPage } from "./crawlState.js";
import { ExtraSeeds, type ExtraSeed } from "./extraSeeds.js";
import type { CrawlStateKeys } from "./stateKeys.js";

/**
 * browsertrix-crawler's serialized crawl state (its src/util/state.ts SaveState), the `state:` section
 * of a --saveState YAML file: queue entries are JSON strings, `finished` the seen URLs that are neither
 * queued nor failed. Older files may carry `done` (a count, or entries) instead of `finished`.
 */
export interface SavedCrawlState {
  id?: string;
  finished: string[];
  queued: string[];
  pending: string[];
  failed: string[];
  errors: string[];
  extraSeeds: string[];
  excluded: string[];
  sitemapDone: boolean;
  done?: number | string[];
}

/** browsertrix-crawler's queue entry (QueueEntry): ours plus when it was added and retries so far. */
interface BtxQueueEntry {
  added?: string;
  url: string;
  seedId?: number;
  depth?: number;
  extraHops?: number;
  retry?: number;
  failed?: boolean;
}

// Depth-major order, as crawlState.ts queues pages.
const DEPTH_WEIGHT = 1e12;

function toBtxEntry(page: QueuedPage, retry: number): string {
  return JSON.stringify({ url: page.url, seedId: page.seedId, depth: page.depth, extraHops: page.extraHops, ...(retry > 0 ? { retry } : {}) });
}

function fromBtxEntry(json: string): { page: QueuedPage; retry: number } {
  const e = JSON.parse(json) as BtxQueueEntry;
  return { page: { url: e.url, depth: e.depth ?? 0, seedId: e.seedId ?? 0, extraHops: e.extraHops ?? 0 }, retry: e.retry ?? 0 };
}

/**
 * The crawl's frontier in browsertrix-crawler's format. `keyOf` is the seen-set key of a URL (the
 * frontier's seen set holds keys, queue entries URLs), so queued and failed pages leave `finished`.
 */
export async function serializeCrawlState(redis: Redis, keys: CrawlStateKeys, crawlId: string, keyOf: (url: string) => string): Promise<SavedCrawlState> {
  const [seenKeys, queuedJson, delayedJson, pendingJson, failedJson, retries, errors, extraSeeds, aliases, sitemap] = await Promise.all([
    redis.smembers(keys.seen), redis.zrange(keys.queue, 0, -1), redis.zrange(keys.retryDelayed, 0, -1), redis.hvals(keys.pending),
    redis.lrange(keys.failed, 0, -1), redis.hgetall(keys.retries), redis.lrange(keys.btxErrors, 0, -1),
    new ExtraSeeds(redis, keys).list(), redis.smembers(keys.seenAliases), redis.get(keys.sitemapRead),
  ]);
  const finished = new Set(seenKeys);
  const leave = (url: string) => {
    finished.delete(url);
    finished.delete(keyOf(url));
  };
  const entry = (json: string) => {
    const page = JSON.parse(json) as QueuedPage;
    return { page, json: toBtxEntry(page, Number(retries[page.url] ?? 0)) };
  };
  const queued = [...queuedJson, ...delayedJson].map(entry);
  for (const { page } of queued) leave(page.url);
  const failed = failedJson.map((json) => {
    const f = JSON.parse(json) as FailedPage;
    leave(f.url);
    return JSON.stringify({ url: f.url, seedId: f.seedId ?? 0, depth: f.depth, extraHops: f.extraHops ?? 0, retry: Math.max(0, f.attempts - 1) });
  });
  // browsertrix-crawler names an extra seed's URL newUrl; its pending pages stay in `finished` too.
  for (const seed of extraSeeds) leave(seed.url);
  return {
    id: crawlId,
    extraSeeds: extraSeeds.map((s) => JSON.stringify({ origSeedId: s.origSeedId, newUrl: s.url })),
    finished: [...finished],
    queued: queued.map((q) => q.json),
    pending: pendingJson.map((json) => entry(json).json),
    sitemapDone: sitemap === "done",
    failed,
    errors,
    excluded: aliases,
  };
}

export interface LoadResult {
  /** False: this very state was loaded into this Redis before (a rerun of the same command): kept as it is now. */
  loaded: boolean;
  finished: number;
  queued: number;
  failed: number;
}

/**
 * Replace the crawl's frontier with a saved state, as browsertrix-crawler's load() does: finished
 * pages are seen (never crawled again), queued and pending ones are queued, failed ones queued again
 * while retries are left, errors restored. Pages crawled into this collection stay listed (done).
 * Loaded once per Redis: a rerun with the same file (or another process joining) keeps the progress made since.
 */
export async function loadCrawlState(redis: Redis, keys: CrawlStateKeys, state: SavedCrawlState, opts: { maxRetries: number; keyOf: (url: string) => string; inScope: (page: QueuedPage) => boolean }): Promise<LoadResult> {
  const digest = createHash("sha256").update(JSON.stringify(state)).digest("hex");
  if ((await redis.set(keys.stateLoaded, digest, "GET")) === digest) return { loaded: false, finished: 0, queued: 0, failed: 0 };
  await redis.del(keys.queue, keys.retryDelayed, keys.pending, keys.leases, keys.seen, keys.seenAliases, keys.failed, keys.retries, keys.btxErrors);
  const seen = new Set(state.finished.map(opts.keyOf));
  const toQueue: { page: QueuedPage; retry: number }[] = [];
  const failed: FailedPage[] = [];
  const queuedUrls = new Set<string>();
  const extraSeeds = new ExtraSeeds(redis, keys);
  for (const json of state.extraSeeds) {
    const { newUrl, origSeedId } = JSON.parse(json) as { newUrl: string; origSeedId: number };
    const seed: ExtraSeed = { origSeedId, url: newUrl };
    await extraSeeds.add(seed);
    seen.add(opts.keyOf(newUrl));
  }
  for (const json of [...state.queued, ...state.pending]) {
    const item = fromBtxEntry(json);
    // browsertrix-crawler rechecks the scope: a page the new scope leaves out is dropped.
    if (opts.inScope(item.page) && !queuedUrls.has(item.page.url)) {
      queuedUrls.add(item.page.url);
      toQueue.push(item);
    }
  }
  if (Array.isArray(state.done)) {
    for (const json of state.done) {
      const e = JSON.parse(json) as BtxQueueEntry;
      if (e.failed) toQueue.push(fromBtxEntry(json));
      else seen.add(opts.keyOf(e.url));
    }
  }
  for (const json of state.failed) {
    const { page, retry } = fromBtxEntry(json);
    // Failed pages are tried again if the retries allowed now leave them some.
    if (retry < opts.maxRetries) toQueue.push({ page, retry });
    else failed.push({ url: page.url, depth: page.depth, seedId: page.seedId, extraHops: page.extraHops, reason: "failed before the state was saved", attempts: retry + 1 });
    seen.add(opts.keyOf(page.url));
  }
  const multi = redis.multi();
  let seq = Number((await redis.get(keys.queueSeq)) ?? 0);
  for (const { page, retry } of toQueue) {
    seen.add(opts.keyOf(page.url));
    multi.zadd(keys.queue, page.depth * DEPTH_WEIGHT + ++seq, JSON.stringify(page));
    if (retry > 0) multi.hset(keys.retries, page.url, retry);
  }
  multi.set(keys.queueSeq, seq);
  if (seen.size) multi.sadd(keys.seen, ...seen);
  if (state.excluded.length) multi.sadd(keys.seenAliases, ...state.excluded);
  for (const f of failed) multi.rpush(keys.failed, JSON.stringify(f));
  for (const error of state.errors) multi.lpush(keys.btxErrors, error);
  if (state.sitemapDone) multi.set(keys.sitemapRead, "done");
  await multi.exec();
  return { loaded: true, finished: state.finished.length, queued: toQueue.length, failed: failed.length };
}
