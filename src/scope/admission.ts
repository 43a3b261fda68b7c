import type { AddressPolicy } from "../fetch/addressPolicy.js";
import { logger } from "../log/logger.js";
import type { RobotsTxt } from "../robots/robotsTxt.js";
import type { Frontier, QueuedPage } from "../frontier/frontier.js";
import type { BudgetRefusal, SeedBudgets } from "../budgets/seedBudgets.js";
import { crawlKey } from "./urls.js";

export type Admission = "queued" | "seen" | "limit" | "robots" | "address" | "budget";

/**
 * Why a page found was not queued, in browsertrix-crawler's words (its reports/skippedPages.jsonl reasons),
 * and ours: its seed's budget or its host's page cap was spent (budgets/seedBudgets.ts).
 */
export type SkipReason = "outOfScope" | "robotsTxt" | "pageLimit" | "duplicate" | BudgetRefusal;
/** Told of each page found but not queued (--reportSkipped). */
export type SkipListener = (page: QueuedPage, reason: SkipReason) => void;

/**
 * The one way pages enter the queue (seeds, links, sitemap entries): a page is known by its key
 * (crawlKey: ?b=2&a=1 is ?a=1&b=2, "/p?" is "/p"), so it is queued once, under the URL seen first.
 * A page on an address the crawler may not fetch (fetch/addressPolicy.ts) is never queued, nor is its
 * robots.txt asked for; with --robots, a page robots.txt disallows is counted as skipped and never
 * queued, so it is never fetched and takes no place under --limit. A page whose seed's budget (or its
 * host's page cap) is spent is not queued either (`admitMany` asks about a page's links in one round trip).
 */
export class PageAdmission {
  /** Hosts already logged as refused (bounded: the log says it once per host, not per link). */
  private readonly refusedHosts = new Set<string>();

  constructor(
    private readonly state: Frontier,
    /** The crawl's address policy: a page on a refused address is never queued. */
    private readonly addresses: AddressPolicy,
    private readonly limit: number,
    private readonly robots: RobotsTxt | null,
    private readonly onSkipped: SkipListener = () => undefined,
    private readonly budgets: SeedBudgets | null = null,
  ) {}

  /** A page found but outside its seed's scope (decided by the caller, before admit). */
  outOfScope(page: QueuedPage): void {
    this.onSkipped(page, "outOfScope");
  }

  /** A page taken from the queue but not crawled (--dedupePagesMinDepth: a duplicate, or past the page limit; a budget spent). */
  skipped(page: QueuedPage, reason: "duplicate" | "pageLimit" | BudgetRefusal): void {
    this.onSkipped(page, reason);
  }

  async admit(page: QueuedPage): Promise<Admission> {
    return (await this.admitMany([page]))[0]!;
  }

  /**
   * Admit a batch of pages (a page's links): their budgets asked about together, the ones that pass sent to
   * the queue in one call per frontier shard.
   */
  async admitMany(pages: QueuedPage[]): Promise<Admission[]> {
    const refusals = this.budgets ? await this.budgets.refusals(pages) : pages.map(() => null);
    const verdicts: (Admission | null)[] = [];
    for (const [i, page] of pages.entries()) verdicts.push(await this.precheck(page, refusals[i] ?? null));
    const passing = pages.filter((_, i) => verdicts[i] === null);
    // A URL keeps a fragment only where its scope tells pages apart by it (--allowHashUrls).
    const queued = passing.length ? await this.state.enqueueMany(passing.map((page) => ({ page, key: crawlKey(page.url, true) })), this.limit) : [];
    let next = 0;
    return verdicts.map((verdict, i) => {
      if (verdict !== null) return verdict;
      const admission = queued[next++]!;
      if (admission === "limit") this.onSkipped(pages[i]!, "pageLimit");
      return admission;
    });
  }

  /**
   * Which of these URLs a link to would still queue (under their keys as admitMany gives them): not found yet and the
   * page limit not reached. Scope, robots and budgets are the caller's to judge; nothing is queued.
   */
  async wouldQueue(urls: string[]): Promise<boolean[]> {
    return this.state.wouldQueue(urls.map((url) => ({ url, key: crawlKey(url, true) })), this.limit);
  }

  /** Why a page may not be queued whatever the frontier holds (null: it may). */
  private async precheck(page: QueuedPage, refusal: BudgetRefusal | null): Promise<Admission | null> {
    const address = await this.addresses.check(page.url);
    // A page whose name does not resolve (now) is queued: loading it is refused and fails, and a retry may find it.
    if (!address.allowed && !address.unresolved) {
      const host = new URL(page.url).host;
      if (!this.refusedHosts.has(host) && this.refusedHosts.size < 1000) {
        this.refusedHosts.add(host);
        logger.warn("scope", "page not crawled: its address is not one the crawler may fetch (further links to this host are not logged)", { url: page.url, reason: address.reason, depth: page.depth });
      }
      return "address";
    }
    if (refusal) {
      this.onSkipped(page, refusal);
      return "budget";
    }
    if (this.robots) {
      const verdict = await this.robots.check(page.url);
      if (!verdict.allowed) {
        if (await this.state.addRobotsSkipped(page.url)) {
          logger.info("robots", "page not crawled: robots.txt disallows it", { url: page.url, reason: verdict.reason, agent: this.robots.agent, depth: page.depth });
        }
        this.onSkipped(page, "robotsTxt");
        return "robots";
      }
    }
    return null;
  }
}
