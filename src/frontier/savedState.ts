import { createHash } from "node:crypto";
import type { Frontier, FailedPage, QueuedPage, StateRedis } from "./frontier.js";
import { unpackEntry } from "./frontierEntry.js";
import { exportFrontier, frontierKeyNames } from "./frontierShards.js";
import { ExtraSeeds, type ExtraSeed } from "./extraSeeds.js";
import type { CrawlStateKeys } from "../state/stateKeys.js";
import { pauseForTests } from "../util/testSeams.js";

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
export async function serializeCrawlState(state: Frontier, redis: StateRedis, keys: CrawlStateKeys, crawlId: string, keyOf: (url: string) => string): Promise<SavedCrawlState> {
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
  // A page read twice while the frontier moved (a list and the delayed set, leased and then handed back) is saved once.
  const listed = new Set<string>();
  const once = (entries: string[]) => entries.map(entry).filter(({ page }) => !listed.has(page.url) && listed.add(page.url));
  const pending = once(frontier.pending);
  const queued = once(frontier.queued);
  for (const { page } of [...pending, ...queued]) leave(page.url);
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

export interface LoadOptions {
  maxRetries: number;
  keyOf: (url: string) => string;
  inScope: (page: QueuedPage) => boolean;
  /** This process (it claims the load while it loads). */
  processId: string;
  /** Whether the process that claimed a load is gone (then its load is done again). */
  loaderGone: (processId: string) => Promise<boolean>;
}

const LOAD_WAIT_MS = 500;

// Claim the load of a state: only if the key still holds what was read (another process may have claimed it).
const CLAIM_LOAD_LUA = `
-- KEYS: stateLoaded; ARGV: digest, claim, value read before ('' for none)
local now = redis.call('GET', KEYS[1]) or ''
if now == ARGV[1] then return 'loaded' end
if now ~= ARGV[3] then return 'changed' end
redis.call('SET', KEYS[1], ARGV[2])
return 'claimed'
`;

/** sha256 of JSON.stringify(saved), hashed piece by piece (a large state is never one string). */
function digestOf(saved: SavedCrawlState): string {
  const hash = createHash("sha256");
  let first = true;
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) continue;
    hash.update(`${first ? "{" : ","}${JSON.stringify(name)}:`);
    first = false;
    if (!Array.isArray(value)) {
      hash.update(JSON.stringify(value));
      continue;
    }
    hash.update("[");
    value.forEach((item: unknown, i) => hash.update(`${i ? "," : ""}${JSON.stringify(item)}`));
    hash.update("]");
  }
  return hash.update(first ? "{}" : "}").digest("hex");
}

/**
 * Whether this process loads the state: not if it is loaded already (then false), nor while another live
 * process loads it (waited for). A load claimed by a process that is gone (killed while loading) is done again.
 */
async function claimLoad(redis: StateRedis, key: string, digest: string, opts: LoadOptions): Promise<boolean> {
  for (;;) {
    const now = (await redis.get(key)) ?? "";
    if (now === digest) return false;
    const [word, , owner] = now.split(" ");
    if (word === "loading" && owner && owner !== opts.processId && !(await opts.loaderGone(owner))) {
      await new Promise((resolve) => setTimeout(resolve, LOAD_WAIT_MS));
      continue;
    }
    const result = await redis.eval(CLAIM_LOAD_LUA, 1, key, digest, `loading ${digest} ${opts.processId}`, now);
    if (result === "claimed") return true;
    if (result === "loaded") return false;
  }
}

/**
 * Replace the crawl's frontier with a saved state, as browsertrix-crawler's load() does: finished
 * pages are seen (never crawled again), queued and pending ones are queued, failed ones queued again
 * while retries are left, errors restored, and (ours) the budgets' counts. Pages crawled into this
 * collection stay done and listed in their WACZ (its pages list keeps them).
 * Loaded once per Redis: a rerun with the same file (or another process joining) keeps the progress made
 * since. The state counts as loaded only once all of it is in: a process killed while loading it leaves it
 * claimed, and the next one (the same command run again) loads it again from the start.
 */
export async function loadCrawlState(state: Frontier, redis: StateRedis, keys: CrawlStateKeys, saved: SavedCrawlState, opts: LoadOptions): Promise<LoadResult> {
  const digest = digestOf(saved);
  if (!(await claimLoad(redis, keys.stateLoaded, digest, opts))) return { loaded: false, finished: 0, queued: 0, failed: 0 };
  const shards = await state.shards();
  const kept = new Set(shards.flatMap((shard) => [shard.done, shard.listedPages]));
  for (const name of await frontierKeyNames(redis, shards)) if (!kept.has(name)) await redis.del(name);
  await Promise.all([keys.frontierQueuedEver, keys.seenAliases, keys.btxErrors].map((k) => redis.del(k)));
  await pauseForTests("state-load");
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
  await redis.set(keys.stateLoaded, digest);
  return { loaded: true, finished: saved.finished.length, queued: toQueue.length, failed: failed.length };
}
