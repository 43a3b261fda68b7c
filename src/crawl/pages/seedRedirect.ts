import { logger } from "../../log/logger.js";
import type { SeedScope } from "../../scope/seedScope.js";
import type { SeedScopes } from "../../scope/seedScopes.js";
import { crawlKey } from "../../scope/urls.js";
import type { Frontier } from "../../frontier/frontier.js";

/** The scope a seed page's links are judged by, and the seed id the pages they lead to carry. */
export interface SeedOfPage {
  scope: SeedScope;
  seedId: number;
}

/**
 * A seed page ended at another URL (a redirect): that URL is this page, so links to it are seen. Left
 * in the seed's scope (scheme, www., a path under it), nothing else changes; out of it, with
 * --addRedirectedSeeds, the redirect target becomes a seed with the same scope rules, and the page's
 * links are judged by it (as browsertrix-crawler does); without, the seed's scope stays.
 */
export async function followSeedRedirect(
  seedUrl: string,
  landedAt: string,
  current: SeedOfPage,
  deps: { state: Frontier; scopes: SeedScopes; addRedirectedSeeds: boolean },
): Promise<SeedOfPage> {
  // Listed under both URLs (pageSteps.ts): packaging keeps the second listing where it keeps the seed's.
  await deps.state.addSeenAlias(crawlKey(landedAt, true), { url: landedAt, pageUrl: seedUrl });
  if (current.scope.covers(landedAt)) return current;
  const details = { url: seedUrl, redirectedTo: landedAt, seedId: current.seedId };
  if (!deps.addRedirectedSeeds) {
    logger.info("page", "seed page redirected out of its scope: not added as a seed (--addRedirectedSeeds would)", details);
    return current;
  }
  const seedId = await deps.scopes.addRedirected(current.seedId, landedAt);
  logger.info("page", "seed page redirected out of its scope: its redirect target is added as a seed", { ...details, newSeedId: seedId });
  return { scope: await deps.scopes.of(seedId), seedId };
}
