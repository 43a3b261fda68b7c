import { mergeCrawlHashes } from "./commit.js";
import { mergeCrawlUrls } from "./captureHistory.js";
import { REMOVED_COUNT_FIELDS } from "./indexKeys.js";
import { keysOf, layoutOf, type DedupeRedis } from "./layout.js";
import { deleteAllHashesSharded, deleteCrawlSharded } from "./shardedHashes.js";

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
 * each had been committed again; the removed counters go back to 0.
 */
export async function purgeCrawls(redis: DedupeRedis, crawlIds: string[]): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  for (const crawlId of crawlIds) {
    // The sharded layout's h: shards are in other slots than the rest: deleted first, shard by shard.
    if (layout.kind === "sharded") await deleteCrawlSharded(redis, layout, crawlId);
    await redis
      .multi()
      .del(...(layout.kind === "sharded" ? [] : [dedupeKeys.crawlHashes(crawlId)]), dedupeKeys.crawlCounts(crawlId), dedupeKeys.crawlWaczList(crawlId))
      .del(dedupeKeys.crawlCaptures(crawlId), dedupeKeys.crawlOutlinks(crawlId))
      .srem(dedupeKeys.allCrawls, crawlId)
      .exec();
  }
  await rebuildMergedIndex(redis);
}

export async function rebuildMergedIndex(redis: DedupeRedis): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  if (layout.kind === "sharded") await deleteAllHashesSharded(redis, layout);
  await redis.del(...(layout.kind === "sharded" ? [] : [dedupeKeys.allHashes]), dedupeKeys.allCounts, dedupeKeys.allUrls);
  const remaining = (await redis.smembers(dedupeKeys.allCrawls)).sort();
  for (const crawlId of remaining) {
    await mergeCrawlHashes(redis, crawlId);
    await mergeCrawlUrls(redis, crawlId);
    const counts = await redis.hgetall(dedupeKeys.crawlCounts(crawlId));
    const pipeline = redis.pipeline();
    for (const [field, value] of Object.entries(counts)) pipeline.hincrby(dedupeKeys.allCounts, field, Number(value));
    await pipeline.exec();
  }
  // Concurrent crawls still running keep their hashes findable (--dedupeConcurrent), as before the purge.
  const concurrent = (await redis.smembers(dedupeKeys.concurrentCrawls)).filter((id) => !remaining.includes(id)).sort();
  for (const crawlId of concurrent) await mergeCrawlHashes(redis, crawlId);
  await redis.hset(dedupeKeys.allCounts, Object.fromEntries(REMOVED_COUNT_FIELDS.map((f) => [f, 0])));
}
