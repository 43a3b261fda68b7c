import type { Redis } from "ioredis";
import type { DedupeIndex } from "../dedupe/dedupeIndex.js";
import type { CrawlStateKeys } from "../state/keys.js";

export interface WaczGroup {
  filename: string;
  /** Index in c:<crawlId>:wacz. */
  index: number;
  warcFiles: string[];
}

/**
 * Which WARC files go into which WACZ. A writer fills one WACZ until the WARC files assigned to it
 * reach --rolloverSize, then starts the next one; every WARC file is assigned when it is opened, so each
 * record's waczIndex names the WACZ that really holds it. Kept in the crawl-state Redis, so a resumed
 * crawl continues the same WACZ (and never registers it twice).
 */
export class WaczPlan {
  private readonly indexOfWarc = new Map<string, number>();
  private current: { filename: string; index: number } | null = null;

  constructor(
    private readonly stateRedis: Redis,
    private readonly keys: CrawlStateKeys,
    private readonly dedupe: DedupeIndex,
    private readonly options: { collection: string; rolloverSize: number; writer: string },
  ) {}

  /** The WACZ filename of a writer's n-th WACZ (0-based): <collection>.wacz, <collection>-2.wacz, ... */
  waczFilename(n: number): string {
    const suffix = this.options.writer === "main" ? "" : `-${this.options.writer}`;
    return `${this.options.collection}${suffix}${n === 0 ? "" : `-${n + 1}`}.wacz`;
  }

  /** Assign a newly opened WARC file to the current WACZ, starting the next WACZ if this one is full. */
  async assignWarc(warcFilename: string): Promise<number> {
    const namesKey = this.keys.waczNames(this.options.writer);
    const names = await this.stateRedis.lrange(namesKey, 0, -1);
    let filename = names[names.length - 1];
    const bytes = filename ? Number((await this.stateRedis.hget(this.keys.waczBytes, filename)) ?? 0) : 0;
    if (!filename || bytes >= this.options.rolloverSize) {
      filename = this.waczFilename(names.length);
      await this.stateRedis.rpush(namesKey, filename);
    }
    // The dedupe Redis may be away mid-crawl: a WACZ already registered keeps its known index.
    const index = this.current?.filename === filename ? this.current.index : await this.dedupe.registerWacz(filename);
    await this.stateRedis.hset(this.keys.warcToWacz, warcFilename, filename);
    this.indexOfWarc.set(warcFilename, index);
    this.current = { filename, index };
    return index;
  }

  async warcClosed(warcFilename: string, size: number): Promise<void> {
    const wacz = await this.stateRedis.hget(this.keys.warcToWacz, warcFilename);
    if (wacz) await this.stateRedis.hincrby(this.keys.waczBytes, wacz, size);
  }

  waczIndexOf(warcFilename: string): number {
    const index = this.indexOfWarc.get(warcFilename);
    if (index === undefined) throw new Error(`WARC ${warcFilename} was never assigned to a WACZ`);
    return index;
  }

  /** The WACZ pages finishing now belong to (the first one before any WARC is open). */
  currentWaczFilename(): string {
    return this.current?.filename ?? this.waczFilename(0);
  }

  /** This writer's WACZ files in order, each with the WARC files assigned to it. */
  async groups(): Promise<WaczGroup[]> {
    const names = await this.stateRedis.lrange(this.keys.waczNames(this.options.writer), 0, -1);
    const assignment = await this.stateRedis.hgetall(this.keys.warcToWacz);
    const groups: WaczGroup[] = [];
    for (const filename of names) {
      const warcFiles = Object.entries(assignment).filter(([, wacz]) => wacz === filename).map(([warc]) => warc).sort();
      groups.push({ filename, index: await this.dedupe.registerWacz(filename), warcFiles });
    }
    return groups;
  }
}
