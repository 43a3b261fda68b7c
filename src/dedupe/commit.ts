import { LUA_KEY } from "./indexKeys.js";
import { mergeCrawlUrls } from "./captureHistory.js";
import { CrawlRanks } from "./payloadOwnership.js";
import { keysOf, layoutOf, type DedupeRedis } from "./indexLayout.js";
import { COMMIT_GUARD_LUA, epochWhenNoRebuild, type MergeTarget } from "./mergeLease.js";
import { fencedArgs, fencedScript } from "../ownership/fencedLease.js";
import { deleteCrawlSharded, mergeCrawlSharded, unpublishCrawlSharded } from "./shardedHashes.js";
import { logger } from "../log/logger.js";
import { pauseForTests } from "../util/testSeams.js";

// Single-node layout (the sharded one merges shard by shard, see shardedHashes.ts):
// merge one HSCAN page of h:<crawlId> into allhashes server-side (first writer wins), so only the
// cursor crosses the network: a million hashes commit in a few hundred calls.
const MERGE_PAGE_LUA = `
local page = redis.call('HSCAN', ${LUA_KEY.crawlHashes("ARGV[1]")}, ARGV[2], 'COUNT', tonumber(ARGV[3]))
local fields = page[2]
for i = 1, #fields, 2 do
  redis.call('HSETNX', KEYS[1], fields[i], ARGV[1])
end
return page[1]
`;
// The same into the allhashes a purge rebuilds, fenced by its merge lease.
const MERGE_PAGE_REBUILD_LUA = fencedScript(MERGE_PAGE_LUA);

// The step that makes a commit count: atomic, so a crash before it repeats only idempotent work and a
// second commit finds the crawl in allcrawls and adds nothing. Not while a purge rebuilds allhashes, nor
// after one replaced it since the merge began (mergeLease.ts): then -1, merge again.
const FINALIZE_LUA = `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  redis.call('SREM', KEYS[2], ARGV[1])
  return 0
end${COMMIT_GUARD_LUA("KEYS[7]", "KEYS[8]", "ARGV[2]")}
local counts = redis.call('HGETALL', KEYS[3])
for i = 1, #counts, 2 do
  redis.call('HINCRBY', KEYS[4], counts[i], tonumber(counts[i + 1]))
end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[6], ARGV[1])
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[5])
return 1
`;

// Take one HSCAN page of a cancelled concurrent crawl's hashes back out of allhashes, where they point at it.
const UNPUBLISH_PAGE_LUA = `
local page = redis.call('HSCAN', ${LUA_KEY.crawlHashes("ARGV[1]")}, ARGV[2], 'COUNT', tonumber(ARGV[3]))
local fields = page[2]
for i = 1, #fields, 2 do
  if redis.call('HGET', KEYS[1], fields[i]) == ARGV[1] then redis.call('HDEL', KEYS[1], fields[i]) end
end
return page[1]
`;

export interface CommitResult {
  crawlId: string;
  /** False when the crawl had been committed before (nothing was added twice). */
  committed: boolean;
  hashes: number;
  seconds: number;
}

/** Merge a finished crawl into the index: its hashes into allhashes, its counts into allcounts. */
export async function commitCrawl(redis: DedupeRedis, crawlId: string, pageSize = 5000): Promise<CommitResult> {
  const started = performance.now();
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  let added: number;
  let mergedCount: number | undefined;
  do {
    const epoch = await epochWhenNoRebuild(redis, () => logger.info("dedupe", "waiting for a purge of the dedupe index to finish before committing", { crawlId }));
    // The sharded merge counts the crawl's hashes as it goes (a second pass over every slot would cost as much).
    if (layout.kind === "sharded") mergedCount = await mergeCrawlSharded(redis, layout, crawlId);
    else await mergeCrawlHashes(redis, crawlId, pageSize);
    await mergeCrawlUrls(redis, crawlId);
    await pauseForTests("commit-merged");
    added = (await redis.eval(
      FINALIZE_LUA, 8, dedupeKeys.allCrawls, dedupeKeys.uncommittedCrawls, dedupeKeys.crawlCounts(crawlId), dedupeKeys.allCounts, dedupeKeys.appliedNotes(crawlId),
      dedupeKeys.concurrentCrawls, dedupeKeys.mergeLease, dedupeKeys.mergeEpoch, crawlId, epoch,
    )) as number;
  } while (added < 0);
  const hashes = mergedCount ?? (await redis.hlen(dedupeKeys.crawlHashes(crawlId)));
  return { crawlId, committed: added === 1, hashes, seconds: (performance.now() - started) / 1000 };
}

/**
 * Add every hash of h:<crawlId> to allhashes unless another crawl has it already (idempotent); `into` a
 * merge lease: to the allhashes its purge is rebuilding instead, refused once a newer rebuild took over.
 */
export async function mergeCrawlHashes(redis: DedupeRedis, crawlId: string, pageSize = 5000, into: MergeTarget = "live"): Promise<void> {
  const layout = layoutOf(redis);
  if (layout.kind === "sharded") {
    await mergeCrawlSharded(redis, layout, crawlId, into);
    return;
  }
  const dedupeKeys = keysOf(redis);
  let cursor = "0";
  do {
    cursor = (await (into === "live"
      ? redis.eval(MERGE_PAGE_LUA, 1, dedupeKeys.allHashes, crawlId, cursor, pageSize)
      : redis.eval(MERGE_PAGE_REBUILD_LUA, ...fencedArgs(into.fence, [dedupeKeys.rebuildHashes], [crawlId, cursor, pageSize])))) as string;
  } while (cursor !== "0");
}

export class CancelRefusedError extends Error {}

/**
 * Drop an uncommitted crawl: its three keys (and its capture history) go and it leaves uncommittedcrawls.
 * A concurrent crawl's hashes are taken out of allhashes first, and the holes refilled from the crawls
 * that remain (committed ones first). Revisits other crawls already wrote against it keep pointing
 * into its WACZ files (their relation.requires name them): --dedupeConcurrent is lossy there.
 */
export async function cancelCrawl(redis: DedupeRedis, crawlId: string, pageSize = 5000): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  if (await redis.sismember(dedupeKeys.allCrawls, crawlId)) {
    throw new CancelRefusedError(`crawl ${crawlId} is committed; remove it with indexer --sourceUrl ... --remove instead`);
  }
  const published = (await redis.sismember(dedupeKeys.concurrentCrawls, crawlId)) === 1;
  if (published && layout.kind === "sharded") await unpublishCrawlSharded(redis, layout, crawlId);
  else if (published) {
    let cursor = "0";
    do {
      cursor = (await redis.eval(UNPUBLISH_PAGE_LUA, 1, dedupeKeys.allHashes, crawlId, cursor, pageSize)) as string;
    } while (cursor !== "0");
  }
  // The sharded layout's h: shards are in other slots than the rest: deleted first, shard by shard.
  if (layout.kind === "sharded") await deleteCrawlSharded(redis, layout, crawlId);
  await redis
    .multi()
    .del(...(layout.kind === "sharded" ? [] : [dedupeKeys.crawlHashes(crawlId)]), dedupeKeys.crawlCounts(crawlId), dedupeKeys.crawlWaczList(crawlId), dedupeKeys.appliedNotes(crawlId))
    .del(dedupeKeys.crawlCaptures(crawlId), dedupeKeys.crawlOutlinks(crawlId))
    .srem(dedupeKeys.uncommittedCrawls, crawlId)
    .srem(dedupeKeys.concurrentCrawls, crawlId)
    .exec();
  if (published) await mergePublishedHashes(redis, pageSize);
}

/** Merge (fill holes only) the hashes of every committed crawl (in crawl order), then of every concurrent one still running. */
export async function mergePublishedHashes(redis: DedupeRedis, pageSize = 5000): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const committed = await new CrawlRanks(redis).sorted(await redis.smembers(dedupeKeys.allCrawls));
  const concurrent = (await redis.smembers(dedupeKeys.concurrentCrawls)).filter((id) => !committed.includes(id)).sort();
  for (const crawlId of [...committed, ...concurrent]) await mergeCrawlHashes(redis, crawlId, pageSize);
}

