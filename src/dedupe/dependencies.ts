import type { Cluster, Redis } from "ioredis";
import type { CrawlStateKeys } from "../state/stateKeys.js";
import type { RelationRequirement } from "../wacz/index.js";
import type { DedupeIndex } from "./dedupeIndex.js";
import { NotRetriedError } from "./retry.js";

/** A WACZ's revisits depend on a WACZ the index no longer knows as finished: its requires would be incomplete. */
export class MissingDependencyError extends NotRetriedError {}

/** One of this crawl's WACZ files: its filename, and its index in c:<crawlId>:wacz once registered. */
export interface OwnWacz {
  filename: string;
  index: number | null;
}

/**
 * Which WACZ files of which crawls this crawl's revisits depend on, kept in the crawl-state Redis
 * (reqCrawls, duperefs) and turned into a WACZ's relation.requires when it is packaged.
 */
export class DependencyTracker {
  constructor(
    private readonly stateRedis: Redis | Cluster,
    private readonly keys: CrawlStateKeys,
    private readonly crawlId: string,
  ) {}

  /**
   * A revisit in our WACZ `own` points at WACZ `waczIndex` of crawl `crawlId`. Kept under our WACZ's
   * filename, known even while the dedupe index is away (its index there may not be yet). Called before
   * the revisit is written, and throws if the dependency cannot be kept: then the revisit is not written.
   */
  async record(crawlId: string, waczIndex: number, own: OwnWacz): Promise<void> {
    if (crawlId === this.crawlId && waczIndex === own.index) return;
    const ref = `${crawlId} ${waczIndex}`;
    const transaction = this.stateRedis.multi();
    if (crawlId !== this.crawlId) transaction.sadd(this.keys.requiredCrawls, crawlId).sadd(this.keys.dupeRefs, ref);
    transaction.sadd(this.keys.dupeRefsOfWacz(own.filename), ref);
    const results = await transaction.exec();
    if (!results) throw new Error("dependency not recorded: transaction aborted");
    for (const [err] of results) if (err) throw err;
  }

  /** relation.requires of our WACZ `own`, from the dependencies' c:<crawlId>:wacz entries. */
  async requirementsOf(own: { filename: string; index: number }, index: DedupeIndex): Promise<RelationRequirement[]> {
    const refs = (await this.stateRedis.smembers(this.keys.dupeRefsOfWacz(own.filename))).sort();
    const requirements: RelationRequirement[] = [];
    for (const ref of refs) {
      const [crawlId, waczIndexText] = ref.split(" ");
      // Recorded before our own index was known: a revisit of a record in the same WACZ needs nothing.
      if (crawlId === this.crawlId && Number(waczIndexText) === own.index) continue;
      const entry = (await index.waczEntries(crawlId))[Number(waczIndexText)];
      if (entry && !entry.hash && index.concurrent && crawlId !== this.crawlId) {
        // --dedupeConcurrent: a WACZ of a crawl still running, not packaged yet: named without hash and size.
        requirements.push({ filename: entry.filename, crawlId });
        continue;
      }
      if (!entry?.hash || entry.size === undefined) {
        // Revisits only point into packaged WACZ files or this writer's earlier ones, so this means the
        // dependency was removed from the index (indexer --remove) meanwhile. Packaging without it would
        // leave revisits that resolve nowhere (and the indexer's purge guard blind): the crawl fails.
        throw new MissingDependencyError(`${own.filename} depends on WACZ ${waczIndexText} of crawl ${crawlId}, which has no finished entry in the dedupe index (removed?): it cannot be listed in relation.requires`);
      }
      requirements.push({ filename: entry.filename, hash: entry.hash, size: entry.size, crawlId });
    }
    return requirements;
  }

  async requiredCrawls(): Promise<string[]> {
    return (await this.stateRedis.smembers(this.keys.requiredCrawls)).sort();
  }
}
