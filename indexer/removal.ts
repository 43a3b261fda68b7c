import { keysOf, type DedupeRedis, crawlsMissingFrom, purgeCrawls, trackRemovedCrawls } from "../src/dedupe/index.js";
import { logger } from "../src/log/logger.js";

export interface RemovalReport {
  removed: { crawlId: string; size: number }[];
  /** WACZ files that stay, whose revisits need a crawl being removed. */
  dependents: { name: string; crawlId: string; requires: string[] }[];
  purged: boolean;
}

export class RemovalRefusedError extends Error {}

/**
 * After an import run: crawls in allcrawls that no WACZ of the manifest belongs to are counted as
 * removed; with `remove` they are purged, unless WACZ files that stay depend on them (then only with
 * `force`, since purging would orphan those revisits).
 */
export async function handleRemovedCrawls(
  redis: DedupeRedis,
  manifestCrawls: Set<string>,
  options: { remove: boolean; force: boolean },
): Promise<RemovalReport> {
  const dedupeKeys = keysOf(redis);
  const removed = await crawlsMissingFrom(redis, manifestCrawls);
  await trackRemovedCrawls(redis, removed);
  const removedIds = new Set(removed.map((r) => r.crawlId));
  const dependents: RemovalReport["dependents"] = [];
  for (const [name, json] of Object.entries(await redis.hgetall(dedupeKeys.importInfo))) {
    const info = JSON.parse(json) as { crawlId: string; requires: string[] };
    if (removedIds.has(info.crawlId)) continue;
    const needed = info.requires.filter((id) => removedIds.has(id));
    if (needed.length) dependents.push({ name, crawlId: info.crawlId, requires: needed });
  }
  if (removed.length) {
    logger.info("indexer", `${removed.length} crawl(s) in the index are no longer in the manifest`, { removed, dependents });
  }
  if (!options.remove || !removed.length) return { removed, dependents, purged: false };
  if (dependents.length && !options.force) {
    const list = dependents.map((d) => `${d.name} (needs ${d.requires.join(", ")})`).join("; ");
    throw new RemovalRefusedError(`not purging: WACZ files that stay depend on crawls being removed: ${list}; use --force to purge anyway`);
  }
  // Recorded first (purging), so a run killed in the middle leaves it for the next run to finish.
  await purgeCrawls(redis, [...removedIds]);
  logger.info("indexer", "purged removed crawls", { crawls: [...removedIds] });
  return { removed, dependents, purged: true };
}
