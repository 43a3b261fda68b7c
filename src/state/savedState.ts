import { createHash } from "node:crypto";
import type { CrawlState, FailedPage, QueuedPage, StateRedis } from "./crawlState.js";
import { unpackEntry } from "./frontierEntry.js";
import { exportFrontier, frontierKeyNames } from "./frontierShards.js";
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
  /**
   * Ours, not browsertrix-crawler's (which ignores it): what the seed budgets and the host cap counted, so a
   * crawl resumed from the file goes on from them instead of starting every budget afresh (seedBudgets.ts).
   */
  budgetCounts?: BudgetCounts;
}

/** Pages and bytes per seed id, pages per host, and the budget that ended a seed, as Redis holds them. */
export interface BudgetCounts {
  seedPages: Record<string, number>;
  seedBytes: Record<string, number>;
  hostPages: Record<string, number>;
  seedEnds: Record<string, string>;
}

const BUDGET_HASHES = ["seedPages", "seedBytes", "hostPages", "seedEnds"] as const;

async function readBudgetCounts(redis: StateRedis, keys: CrawlStateKeys): Promise<BudgetCounts | null> {
  const [seedPages, seedBytes, hostPages, seedEnds] = await Promise.all(BUDGET_HASHES.map((name) => redis.hgetall(keys[name])));
  if (![seedPages, seedBytes, hostPages, seedEnds].some((h) => Object.keys(h).length)) return null;
  const numbers = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Number(v)]));
  return { seedPages: numbers(seedPages), seedBytes: numbers(seedBytes), hostPages: numbers(hostPages), seedEnds };
}

/** The counts replace this Redis's (slots of pages in progress too: none is in progress in a loaded state). */
async function writeBudgetCounts(redis: StateRedis, keys: CrawlStateKeys, counts: BudgetCounts | undefined): Promise<void> {
  for (const name of [...BUDGET_HASHES, "budgetSlots"] as const) await redis.del(keys[name]);
  if (!counts) return;
  for (const name of BUDGET_HASHES) {
    const entries = Object.entries(counts[name]);
    if (entries.length) await redis.hset(keys[name], Object.fromEntries(entries.map(([k, v]) => [k, String(v)])));
  }
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

function toBtxEntry(page: QueuedPage, retry: number): string {
  return JSON.stringify({ url: page.url, seedId: page.seedId, depth: page.depth, extraHops: page.extraHops, ...(retry > 0 ? { retry } : {}) });
}

function fromBtxEntry(json: string): { page: QueuedPage; retry: number } {
  const e = JSON.parse(json) as BtxQueueEntry;
  return { page: { url: e.url, depth: e.depth ?? 0, seedId: e.seedId ?? 0, extraHops: e.extraHops ?? 0 }, retry: e.retry ?? 0 };
}

/**
 * The crawl's frontier in browsertrix-crawler's format. `keyOf` is the seen key of a URL: queued and
 * failed pages leave `finished` (the pages crawled, or taken and skipped).
 */
export async function serializeCrawlState(state: CrawlState, redis: StateRedis, keys: CrawlStateKeys, crawlId: string, keyOf: (url: string) => string): Promise<SavedCrawlState> {
  const [frontier, errors, extraSeeds, aliases, sitemap, budgetCounts] = await Promise.all([
    exportFrontier(redis, await state.shards()), redis.lrange(keys.btxErrors, 0, -1),
    new ExtraSeeds(redis, keys).list(), redis.smembers(keys.seenAliases), redis.get(keys.sitemapRead),
    readBudgetCounts(redis, keys),
  ]);
  const finished = new Map(frontier.finished.map((url) => [keyOf(url), url]));
  const leave = (url: string) => {
    finished.delete(url);
    finished.delete(keyOf(url));
  };
  const entry = (entry: string) => {
    const page = unpackEntry(entry);
    return { page, json: toBtxEntry(page, Number(frontier.retries[page.url] ?? 0)) };
  };
  const queued = frontier.queued.map(entry);
  for (const { page } of queued) leave(page.url);
  const pending = frontier.pending.map(entry);
  for (const { page } of pending) leave(page.url);
  const failed = frontier.failed.map((json) => {
    const f = JSON.parse(json) as FailedPage;
    leave(f.url);
    return JSON.stringify({ url: f.url, seedId: f.seedId ?? 0, depth: f.depth, extraHops: f.extraHops ?? 0, retry: Math.max(0, f.attempts - 1) });
  });
  // browsertrix-crawler names an extra seed's URL newUrl; its pending pages stay in `finished` too.
  for (const seed of extraSeeds) leave(seed.url);
  return {
    id: crawlId,
    extraSeeds: extraSeeds.map((s) => JSON.stringify({ origSeedId: s.origSeedId, newUrl: s.url })),
    finished: [...finished.values()],
    queued: queued.map((q) => q.json),
    pending: pending.map((p) => p.json),
    sitemapDone: sitemap === "done",
    failed,
    errors,
    excluded: aliases,
    ...(budgetCounts ? { budgetCounts } : {}),
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
 * while retries are left, errors restored, and (ours) the budgets' counts. Pages crawled into this
 * collection stay listed (done).
 * Loaded once per Redis: a rerun with the same file (or another process joining) keeps the progress made since.
 */
export async function loadCrawlState(state: CrawlState, redis: StateRedis, keys: CrawlStateKeys, saved: SavedCrawlState, opts: { maxRetries: number; keyOf: (url: string) => string; inScope: (page: QueuedPage) => boolean }): Promise<LoadResult> {
  const digest = createHash("sha256").update(JSON.stringify(saved)).digest("hex");
  if ((await redis.set(keys.stateLoaded, digest, "GET")) === digest) return { loaded: false, finished: 0, queued: 0, failed: 0 };
  const shards = await state.shards();
  for (const name of await frontierKeyNames(redis, shards)) await redis.del(name);
  await Promise.all([keys.frontierQueuedEver, keys.seenAliases, keys.btxErrors].map((k) => redis.del(k)));
  const seen = new Set(saved.finished.map(opts.keyOf));
  const toQueue: { page: QueuedPage; retry: number }[] = [];
  const failed: FailedPage[] = [];
  const queuedUrls = new Set<string>();
  const extraSeeds = new ExtraSeeds(redis, keys);
  for (const json of saved.extraSeeds) {
    const { newUrl, origSeedId } = JSON.parse(json) as { newUrl: string; origSeedId: number };
    const seed: ExtraSeed = { origSeedId, url: newUrl };
    await extraSeeds.add(seed);
    seen.add(opts.keyOf(newUrl));
  }
  for (const json of [...saved.queued, ...saved.pending]) {
    const item = fromBtxEntry(json);
    // browsertrix-crawler rechecks the scope: a page the new scope leaves out is dropped.
    if (opts.inScope(item.page) && !queuedUrls.has(item.page.url)) {
      queuedUrls.add(item.page.url);
      toQueue.push(item);
    }
  }
  if (Array.isArray(saved.done)) {
    for (const json of saved.done) {
      const e = JSON.parse(json) as BtxQueueEntry;
      if (e.failed) toQueue.push(fromBtxEntry(json));
      else seen.add(opts.keyOf(e.url));
    }
  }
  for (const json of saved.failed) {
    const { page, retry } = fromBtxEntry(json);
    // Failed pages are tried again if the retries allowed now leave them some.
    if (retry < opts.maxRetries) toQueue.push({ page, retry });
    else failed.push({ url: page.url, depth: page.depth, seedId: page.seedId, extraHops: page.extraHops, reason: "failed before the state was saved", attempts: retry + 1 });
    seen.add(opts.keyOf(page.url));
  }
  for (const { page } of toQueue) seen.add(opts.keyOf(page.url));
  await state.pushPages(toQueue);
  await state.addSeen([...seen]);
  // The page limit counts every page the saved crawl had queued, as it did there.
  await redis.set(keys.frontierQueuedEver, seen.size);
  if (saved.excluded.length) {
    await redis.sadd(keys.seenAliases, ...saved.excluded);
    await state.addSeen(saved.excluded);
  }
  await state.addFailed(failed);
  for (const error of saved.errors) await redis.lpush(keys.btxErrors, error);
  if (saved.sitemapDone) await redis.set(keys.sitemapRead, "done");
  await writeBudgetCounts(redis, keys, saved.budgetCounts);
  return { loaded: true, finished: saved.finished.length, queued: toQueue.length, failed: failed.length };
}
