import type { ExtraSeeds } from "../frontier/extraSeeds.js";
import type { SeedScope } from "./seedScope.js";

/**
 * Every seed's scope by seed id: the seeds given (ids 0..n-1), then the seeds added at a seed's
 * redirect target (--addRedirectedSeeds), which any process of the crawl may have added; a page of
 * an unknown id makes this process read them from Redis.
 */
export class SeedScopes {
  private readonly added: SeedScope[] = [];

  constructor(
    /** The seeds given, in order. */
    readonly given: SeedScope[],
    private readonly extraSeeds: ExtraSeeds,
  ) {}

  async of(seedId: number): Promise<SeedScope> {
    if (seedId < this.given.length) return this.given[seedId];
    if (seedId - this.given.length >= this.added.length) await this.sync();
    const scope = this.added[seedId - this.given.length];
    if (!scope) throw new Error(`the crawl state names seed ${seedId}, which is not in it (a different crawl's state?)`);
    return scope;
  }

  /** Add a seed at `url` with the scope rules of seed `origSeedId`; returns its id (the same if added before). */
  async addRedirected(origSeedId: number, url: string): Promise<number> {
    const index = await this.extraSeeds.add({ origSeedId, url });
    await this.sync();
    return this.given.length + index;
  }

  private async sync(): Promise<void> {
    for (const seed of await this.extraSeeds.list(this.added.length)) {
      // An extra seed's original comes before it: given, or already added.
      const orig = seed.origSeedId < this.given.length ? this.given[seed.origSeedId] : this.added[seed.origSeedId - this.given.length];
      this.added.push(orig.withUrl(seed.url));
    }
  }
}
