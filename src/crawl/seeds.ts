import type { CrawlOptions } from "../config/crawlOptions.js";
import type { RunContext } from "../fetch/connectionRules.js";
import { RobotsTxt } from "../robots/robotsTxt.js";
import { PageAdmission, type SkipListener } from "../scope/admission.js";
import { SeedScope } from "../scope/seedScope.js";
import type { Frontier } from "../frontier/frontier.js";
import type { SeedBudgets } from "../budgets/seedBudgets.js";

/** How pages enter the crawl: each seed's scope, and the admission rules (page limit, robots.txt). */
export interface Seeding {
  /** The scope of each seed, in the order of the seeds (a page carries its seed's index). */
  scopes: SeedScope[];
  admission: PageAdmission;
  robotsTxt: RobotsTxt;
  /** Each seed's budget and the per-host page cap, shared by the crawl's processes. */
  budgets: SeedBudgets;
}

/**
 * Queue the seeds (robots.txt permitting, with --robots; the run's address policy permitting); seen before, as on a restart, they are not queued again.
 * `onSkipped` hears of every page found but not queued, seeds and links alike (--reportSkipped).
 */
export async function admitSeeds(options: CrawlOptions, context: RunContext, state: Frontier, budgets: SeedBudgets, onSkipped?: SkipListener): Promise<Seeding> {
  const scopes = options.seeds.map((seed, i) => new SeedScope(seed, options.seedScopes[i]));
  const robotsTxt = new RobotsTxt({ rules: context, userAgent: options.userAgent, agent: options.robots?.agent ?? "*" });
  // --dedupePagesMinDepth: how many queued pages are duplicates is unknown, so the queue is not capped;
  // the limit counts crawled pages as they are taken instead (crawl/pages/pageSteps.ts), as browsertrix-crawler does.
  const queueLimit = options.dedupeFlags.pagesMinDepth >= 0 ? 0 : options.limit;
  const admission = new PageAdmission(state, context.addresses, queueLimit, options.robots ? robotsTxt : null, onSkipped, budgets);
  for (const [seedId, scope] of scopes.entries()) {
    await admission.admit({ url: scope.url, depth: 0, seedId, extraHops: 0 });
  }
  return { scopes, admission, robotsTxt, budgets };
}
