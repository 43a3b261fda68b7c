import type { Cluster, Redis } from "ioredis";
import type { DedupeIndex } from "../dedupe/dedupeIndex.js";
import type { CrawlStateKeys } from "../state/stateKeys.js";
import type { OwnWacz } from "../dedupe/dependencies.js";
import { withDedupeRetries } from "../dedupe/retry.js";
import { errorMessage } from "../log/logger.js";
import { ThrottledWarning } from "../log/throttledWarning.js";

export interface WaczGroup {
  filename: string;
  /** Index in c:<crawlId>:wacz. */
  index: number;
  warcFiles: string[];
}

/**
 * Which WARC files go into which WACZ. A writer fills one WACZ until the WARC files assigned to it
 * reach --rolloverSize, then starts the next one; every WARC file is assigned when it is opened, so each
 * record's waczIndex names the WACZ that really holds it. The assignment is kept in the crawl-state Redis
 * (so a resumed crawl continues the same WACZ, and never registers it twice) and is recorded there
 * before the WACZ is registered in the dedupe index: with the dedupe Redis away, the WARC file is still
 * packaged, and the WACZ is registered when that Redis answers again (at the latest when packaging).
 */
export class WaczPlan {
  private readonly waczOfWarc = new Map<string, string>();
  /** Index in c:<crawlId>:wacz of each WACZ registered so far. */
  private readonly registered = new Map<string, number>();
  /** WACZ files assigned while the dedupe Redis was away, oldest first. */
  private readonly waiting: string[] = [];
  private readonly unregistered = new ThrottledWarning("dedupe");
  private current: string | null = null;
  /** The WACZ the first WARC file will open, until one does (see load()). */
  private nextName: string;

  constructor(
    private readonly stateRedis: Redis | Cluster,
    private readonly keys: CrawlStateKeys,
    private readonly dedupe: DedupeIndex,
    private readonly options: { collection: string; rolloverSize: number; writer: string },
  ) {
    this.nextName = this.waczFilename(0);
  }

  /** The WACZ filename of a writer's n-th WACZ (0-based): <collection>.wacz, <collection>-2.wacz, ... */
  waczFilename(n: number): string {
    const suffix = this.options.writer === "main" ? "" : `-${this.options.writer}`;
    return `${this.options.collection}${suffix}${n === 0 ? "" : `-${n + 1}`}.wacz`;
  }

  /** Assign a newly opened WARC file to the current WACZ, starting the next WACZ if this one is full. */
  async assignWarc(warcFilename: string): Promise<OwnWacz> {
    const namesKey = this.keys.waczNames(this.options.writer);
    const names = await this.stateRedis.lrange(namesKey, 0, -1);
    let filename = names[names.length - 1];
    const bytes = filename ? Number((await this.stateRedis.hget(this.keys.waczBytes, filename)) ?? 0) : 0;
    // A packaged WACZ is sealed (other WACZ files may require it by its hash): a restarted writer starts the next.
    if (!filename || bytes >= this.options.rolloverSize || (await this.isSealed(filename))) {
      filename = this.waczFilename(names.length);
      await this.stateRedis.rpush(namesKey, filename);
    }
    await this.stateRedis.hset(this.keys.warcToWacz, warcFilename, filename);
    this.waczOfWarc.set(warcFilename, filename);
    this.current = filename;
    return { filename, index: await this.tryRegister(filename) };
  }

  /** A WARC file removed before its first record (nothing of it remains): no WACZ expects it any more. */
  async unassignWarc(warcFilename: string): Promise<void> {
    await this.stateRedis.hdel(this.keys.warcToWacz, warcFilename);
    this.waczOfWarc.delete(warcFilename);
  }

  async warcClosed(warcFilename: string, size: number): Promise<void> {
    const wacz = await this.stateRedis.hget(this.keys.warcToWacz, warcFilename);
    if (wacz) await this.stateRedis.hincrby(this.keys.waczBytes, wacz, size);
  }

  /** The WACZ a WARC file goes into; its index is null while the dedupe index cannot register it. */
  async waczOf(warcFilename: string): Promise<OwnWacz> {
    const filename = this.waczOfWarc.get(warcFilename);
    if (filename === undefined) throw new Error(`WARC ${warcFilename} was never assigned to a WACZ`);
    return { filename, index: await this.tryRegister(filename) };
  }

  /**
   * The index in c:<crawlId>:wacz of one of this writer's WACZ files, registering it (after the earlier
   * ones) if needed: index notes need it. Throws while the index cannot register it (the note waits).
   */
  async registeredIndex(waczFilename: string): Promise<number> {
    const index = await this.tryRegister(waczFilename);
    if (index === null) throw new Error(`${waczFilename} not registered in the dedupe index yet`);
    return index;
  }

  /** The filename of the WACZ a WARC file goes into. */
  waczFilenameOf(warcFilename: string): string {
    const filename = this.waczOfWarc.get(warcFilename);
    if (filename === undefined) throw new Error(`WARC ${warcFilename} was never assigned to a WACZ`);
    return filename;
  }

  /** Find where a restarted writer goes on: its last WACZ, unless that one is packaged already. */
  async load(): Promise<void> {
    const names = await this.stateRedis.lrange(this.keys.waczNames(this.options.writer), 0, -1);
    const last = names[names.length - 1];
    this.current = last && !(await this.isSealed(last)) ? last : null;
    this.nextName = this.waczFilename(names.length);
  }

  async isSealed(filename: string): Promise<boolean> {
    return (await this.stateRedis.sismember(this.keys.waczSealed, filename)) === 1;
  }

  async seal(filename: string): Promise<void> {
    await this.stateRedis.sadd(this.keys.waczSealed, filename);
  }

  /** Whether a WACZ is one of this writer's own (it is packaged by this writer, in order). */
  async isOwnWacz(filename: string): Promise<boolean> {
    if (this.waczOfWarcHas(filename)) return true;
    return (await this.stateRedis.lrange(this.keys.waczNames(this.options.writer), 0, -1)).includes(filename);
  }

  private waczOfWarcHas(filename: string): boolean {
    for (const wacz of this.waczOfWarc.values()) if (wacz === filename) return true;
    return false;
  }

  /** The WACZ pages finishing now belong to (the first one before any WARC is open). */
  currentWaczFilename(): string {
    return this.current ?? this.nextName;
  }

  /** This writer's WACZ files in order, each with the WARC files assigned to it, all registered. */
  async groups(): Promise<WaczGroup[]> {
    const names = await this.stateRedis.lrange(this.keys.waczNames(this.options.writer), 0, -1);
    const assignment = await this.stateRedis.hgetall(this.keys.warcToWacz);
    const groups: WaczGroup[] = [];
    for (const filename of names) {
      const warcFiles = Object.entries(assignment).filter(([, wacz]) => wacz === filename).map(([warc]) => warc).sort();
      const index = this.registered.get(filename) ?? (await withDedupeRetries(`register ${filename} in the dedupe index`, () => this.dedupe.registerWacz(filename)));
      this.registered.set(filename, index);
      groups.push({ filename, index, warcFiles });
    }
    return groups;
  }

  /**
   * Register a WACZ once; while the dedupe Redis is away, null (tried again on the next call). Earlier
   * WACZ files still waiting are registered first, so c:<crawlId>:wacz keeps this writer's order.
   */
  private async tryRegister(filename: string): Promise<number | null> {
    const known = this.registered.get(filename);
    if (known !== undefined) return known;
    if (!this.waiting.includes(filename)) this.waiting.push(filename);
    try {
      while (this.waiting.length) {
        const next = this.waiting[0];
        this.registered.set(next, await this.dedupe.registerWacz(next));
        // By value: a concurrent call may have registered and removed it already (registering twice is harmless).
        if (this.waiting.includes(next)) this.waiting.splice(this.waiting.indexOf(next), 1);
        if (next === filename) break;
      }
      return this.registered.get(filename) ?? null;
    } catch (err) {
      this.unregistered.warn("dedupe index unavailable: WACZ not registered yet (its records are packaged all the same)", { wacz: filename, error: errorMessage(err) });
      return null;
    }
  }
}
