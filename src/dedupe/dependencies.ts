import type { Redis } from "ioredis";
import type { CrawlStateKeys } from "../state/keys.js";
import type { RelationRequirement } from "../wacz/index.js";
import type { DedupeIndex } from "./dedupeIndex.js";
import { logger } from "../log/logger.js";

/**
 * Which WACZ files of which crawls this crawl's revisits depend on, kept in the crawl-state Redis
 * (reqCrawls, duperefs) and turned into a WACZ's relation.requires when it is packaged.
 */
export class DependencyTracker {
  constructor(
    private readonly stateRedis: Redis,
    private readonly keys: CrawlStateKeys,
    private readonly crawlId: string,
  ) {}

  /** A revisit in our WACZ `ownWaczIndex` points at WACZ `waczIndex` of crawl `crawlId`. */
  async record(crawlId: string, waczIndex: number, ownWaczIndex: number): Promise<void> {
    if (crawlId === this.crawlId && waczIndex === ownWaczIndex) return;
    const ref = `${crawlId} ${waczIndex}`;
    const pipeline = this.stateRedis.pipeline();
    if (crawlId !== this.crawlId) pipeline.sadd(this.keys.requiredCrawls, crawlId).sadd(this.keys.dupeRefs, ref);
    pipeline.sadd(this.keys.dupeRefsOfWacz(ownWaczIndex), ref);
    await pipeline.exec();
  }

  /** relation.requires of our WACZ `ownWaczIndex`, from the dependencies' c:<crawlId>:wacz entries. */
  async requirementsOf(ownWaczIndex: number, index: DedupeIndex): Promise<RelationRequirement[]> {
    const refs = (await this.stateRedis.smembers(this.keys.dupeRefsOfWacz(ownWaczIndex))).sort();
    const requirements: RelationRequirement[] = [];
    for (const ref of refs) {
      const [crawlId, waczIndexText] = ref.split(" ");
      const entry = (await index.waczEntries(crawlId))[Number(waczIndexText)];
      if (!entry?.hash || entry.size === undefined) {
        logger.warn("dedupe", "dependency WACZ has no finished entry; not listed in relation.requires", { crawlId, waczIndex: waczIndexText });
        continue;
      }
      requirements.push({ filename: entry.filename, hash: entry.hash, size: entry.size, crawlId });
    }
    return requirements;
  }

  async requiredCrawls(): Promise<string[]> {
    return (await this.stateRedis.smembers(this.keys.requiredCrawls)).sort();
  }
}
