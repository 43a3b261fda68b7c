// Purging crawls from the index (indexer --remove), as a recorded intention: the crawls
// go into `purging` first and leave it last, so a purge killed at any step is finished by the next indexer
// run (finishPurges), and lookups never answer with a crawl being purged. Every step is idempotent: the
// crawl's keys deleted, allhashes/allurls/allcounts rebuilt from the crawls that remain, the import records
// of its WACZ files dropped (so a manifest that brings them back imports them again).
import { mergeCrawlHashes } from "./commit.js";
import { mergeCrawlUrls } from "./captureHistory.js";
import { CrawlRanks, renumberCrawls } from "./payloadOwnership.js";
import { REMOVED_COUNT_FIELDS } from "./indexKeys.js";
import { keysOf, layoutOf, scriptByLayout, type DedupeRedis } from "./indexLayout.js";
import { leaseLostOr, MergeLease } from "./mergeLease.js";
import { fencedArgs, fencedScript } from "../ownership/fencedLease.js";
import { clearRebuildSharded, DELETE_KEYS_LUA, deleteCrawlSharded, SWAP_KEYS_LUA, swapRebuiltSharded } from "./shardedHashes.js";
import { runScript } from "./shardSlots.js";
import { pauseForTests } from "../util/testSeams.js";

// allcounts again from scratch: the sums of the committed crawls' counts, nothing removed. One script, so a
// commit (which adds its counts as it joins allcrawls) is counted exactly once, before or after it.
// Fenced by the merge lease (the fence key and epoch go first).
const RECOUNT_LUA = scriptByLayout((lua) => fencedScript(`
local sums = {}
for _, crawl in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local counts = redis.call('HGETALL', ${lua.crawlCounts("crawl")})
  for i = 1, #counts, 2 do sums[counts[i]] = (sums[counts[i]] or 0) + tonumber(counts[i + 1]) end
end
redis.call('DEL', KEYS[2])
for field, sum in pairs(sums) do redis.call('HSET', KEYS[2], field, string.format('%.0f', sum)) end
for i = 1, #ARGV do redis.call('HSET', KEYS[2], ARGV[i], 0) end
return 1
`));

/** Committed crawls not in `keep`, with the total size of each. */
export async function crawlsMissingFrom(redis: DedupeRedis, keep: Set<string>): Promise<{ crawlId: string; size: number }[]> {
  const dedupeKeys = keysOf(redis);
  const committed = (await redis.smembers(dedupeKeys.allCrawls)).filter((id) => !keep.has(id)).sort();
  const sizes = await Promise.all(committed.map((id) => redis.hget(dedupeKeys.crawlCounts(id), "totalCrawlSize")));
  return committed.map((crawlId, i) => ({ crawlId, size: Number(sizes[i] ?? 0) }));
}

/** Record (not purge) crawls that left the manifest: allcounts removedCrawls / removedCrawlSize. */
export async function trackRemovedCrawls(redis: DedupeRedis, removed: { crawlId: string; size: number }[]): Promise<void> {
  const dedupeKeys = keysOf(redis);
  await redis.hset(dedupeKeys.allCounts, {
    removedCrawls: removed.length,
    removedCrawlSize: removed.reduce((sum, r) => sum + r.size, 0),
  });
}

/**
 * Delete crawls from the index and rebuild allhashes and allcounts from the crawls that remain, as if
 * each had been committed again; the removed counters go back to 0. Recorded in `purging` first.
 */
export async function purgeCrawls(redis: DedupeRedis, crawlIds: string[]): Promise<void> {
  if (crawlIds.length) await redis.sadd(keysOf(redis).purging, ...crawlIds);
  await pauseForTests("purge-recorded");
  await finishPurges(redis);
}

/** Finish every purge recorded in `purging` (one a killed run left, too); returns the crawls purged. */
export async function finishPurges(redis: DedupeRedis): Promise<string[]> {
  const dedupeKeys = keysOf(redis);
  const purging = (await redis.smembers(dedupeKeys.purging)).sort();
  if (!purging.length) return [];
  for (const crawlId of purging) await deleteCrawl(redis, crawlId);
  await pauseForTests("purge-deleted");
  await rebuildMergedIndex(redis);
  await pauseForTests("purge-rebuilt");
  await forgetImportsOf(redis, new Set(purging));
  await redis.srem(dedupeKeys.purging, ...purging);
  return purging;
}

async function deleteCrawl(redis: DedupeRedis, crawlId: string): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  // The sharded layout's h: shards are in other slots than the rest: deleted first, shard by shard.
  if (layout.kind === "sharded") await deleteCrawlSharded(redis, layout, crawlId);
  await redis
    .multi()
    .del(...(layout.kind === "sharded" ? [] : [dedupeKeys.crawlHashes(crawlId)]), dedupeKeys.crawlCounts(crawlId), dedupeKeys.crawlWaczList(crawlId))
    .del(dedupeKeys.crawlCaptures(crawlId), dedupeKeys.crawlOutlinks(crawlId))
    .srem(dedupeKeys.allCrawls, crawlId)
    .hdel(dedupeKeys.crawlOrder, crawlId)
    .exec();
}

/** Drop import tracking of WACZ files of purged crawls, so a manifest that brings them back re-imports them. */
async function forgetImportsOf(redis: DedupeRedis, crawlIds: Set<string>): Promise<void> {
  const dedupeKeys = keysOf(redis);
  for (const [name, json] of Object.entries(await redis.hgetall(dedupeKeys.importInfo))) {
    if (!crawlIds.has((JSON.parse(json) as { crawlId: string }).crawlId)) continue;
    await redis.multi().hdel(dedupeKeys.importInfo, name).srem(dedupeKeys.importDone, name).srem(dedupeKeys.importQueued, name).hdel(dedupeKeys.importConserve, name).exec();
  }
}

/**
 * allhashes, allurls and allcounts again from the committed crawls (in crawl order), built aside and put in
 * place when complete, under the merge lease that commits respect (mergeLease.ts): lookups meanwhile see the
 * old index (less the crawls being purged), and no commit meanwhile is lost. Every write under the lease
 * (clearing and filling the keys aside, the swap, the epoch, the recount, the renumbering) is fenced by it: a
 * rebuild whose lease another took over throws LeaseLostError at its next write (the newer one does it all).
 */
export async function rebuildMergedIndex(redis: DedupeRedis): Promise<void> {
  const lease = await MergeLease.acquire(redis);
  try {
    await rebuildUnderLease(redis, lease);
  } catch (err) {
    throw leaseLostOr(err, "the rebuild of the merged index (allhashes) after a purge");
  } finally {
    await lease.release();
  }
}

async function rebuildUnderLease(redis: DedupeRedis, lease: MergeLease): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  // What a rebuild killed before its end left aside (fenced: never what a newer rebuild is building).
  if (layout.kind === "sharded") await clearRebuildSharded(redis, layout, (shards) => lease.shardFence(shards));
  await runScript(redis, DELETE_KEYS_LUA, ...fencedArgs(lease.fence, [...(layout.kind === "sharded" ? [] : [dedupeKeys.rebuildHashes]), dedupeKeys.rebuildUrls]));
  const merged = await new CrawlRanks(redis).sorted(await redis.smembers(dedupeKeys.allCrawls));
  for (const crawlId of merged) {
    await mergeCrawlHashes(redis, crawlId, 5000, lease);
    await mergeCrawlUrls(redis, crawlId, lease);
  }
  // Concurrent crawls still running keep their hashes findable (--dedupeConcurrent), as before the purge.
  const concurrent = (await redis.smembers(dedupeKeys.concurrentCrawls)).filter((id) => !merged.includes(id)).sort();
  for (const crawlId of concurrent) await mergeCrawlHashes(redis, crawlId, 5000, lease);
  await pauseForTests("purge-rebuilt-aside");
  if (layout.kind === "sharded") {
    await swapRebuiltSharded(redis, layout, (shards) => lease.shardFence(shards));
    await runScript(redis, SWAP_KEYS_LUA, ...fencedArgs(lease.fence, [dedupeKeys.rebuildUrls, dedupeKeys.allUrls]));
  } else {
    await runScript(redis, SWAP_KEYS_LUA, ...fencedArgs(lease.fence, [dedupeKeys.rebuildHashes, dedupeKeys.allHashes, dedupeKeys.rebuildUrls, dedupeKeys.allUrls]));
  }
  await lease.raiseEpoch();
  // Crawls committed while the lease had lapsed (a stalled purger no other took over from), and what
  // concurrent crawls published into the old allhashes meanwhile: merged into the new one (filling holes only).
  const committedSince = (await redis.smembers(dedupeKeys.allCrawls)).filter((id) => !merged.includes(id)).sort();
  for (const crawlId of committedSince) {
    await mergeCrawlHashes(redis, crawlId);
    await mergeCrawlUrls(redis, crawlId);
  }
  for (const crawlId of (await redis.smembers(dedupeKeys.concurrentCrawls)).sort()) await mergeCrawlHashes(redis, crawlId);
  await redis.eval(RECOUNT_LUA(redis), ...fencedArgs(lease.fence, [dedupeKeys.allCrawls, dedupeKeys.allCounts], [...REMOVED_COUNT_FIELDS]));
  await renumberCrawls(redis, lease.fence);
}
