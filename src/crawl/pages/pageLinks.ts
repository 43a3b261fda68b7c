import type { SeedScope } from "../../scope/seedScope.js";
import { withoutHash } from "../../scope/urls.js";
import type { QueuedPage } from "../../frontier/frontier.js";
import type { PageContext } from "./pageChain.js";

/** The page's links as its seed's scope tells pages apart: without their #fragment unless --allowHashUrls. */
export function pageLinks(links: string[], scope: SeedScope): string[] {
  return scope.allowHash ? links : [...new Set(links.map(withoutHash))];
}

/** The page's in-scope links go to the queue in one batch (one frontier call per shard, not one per link). */
export async function enqueueLinks(links: string[], page: QueuedPage, context: PageContext, scope: SeedScope): Promise<number> {
  const found: QueuedPage[] = [];
  for (const link of links) {
    const decision = scope.decide(link, page.depth, page.extraHops);
    if (!decision.inScope) {
      context.admission.outOfScope({ url: link, depth: page.depth + 1, seedId: page.seedId, extraHops: page.extraHops });
      continue;
    }
    found.push({ url: link, depth: page.depth + 1, seedId: page.seedId, extraHops: decision.extraHops });
  }
  return (await context.admission.admitMany(found)).filter((added) => added === "queued").length;
}

/**
 * Of a page's links, those that would still bring the crawl a page: in its seed's scope, not found yet, the page limit
 * not reached. A link the crawl already has (another page named it) or would not follow is none a page must give it.
 */
export async function linksNotYetFound(links: string[], page: QueuedPage, context: PageContext, scope: SeedScope): Promise<string[]> {
  const candidates = [...new Set(links)].filter((link) => scope.decide(link, page.depth, page.extraHops).inScope);
  const keyed = candidates.map((link) => (scope.allowHash ? link : withoutHash(link)));
  const wanted = await context.admission.wouldQueue(keyed);
  return candidates.filter((_, i) => wanted[i]);
}

/**
 * Links the page's behaviors added: judged by the scope like its other links, or with
 * --alwaysAddBehaviorLinks queued whatever the scope and depth, unless an --exclude matches (as
 * browsertrix-crawler does). Either way the page limit and robots.txt still apply.
 */
export async function enqueueBehaviorLinks(links: string[], page: QueuedPage, context: PageContext, scope: SeedScope): Promise<number> {
  const pageKeyed = pageLinks(links, scope);
  if (!context.options.linkBehavior.alwaysAddBehaviorLinks) return enqueueLinks(pageKeyed, page, context, scope);
  const found = pageKeyed.filter((link) => !scope.excludes(link)).map((link) => ({ url: link, depth: page.depth + 1, seedId: page.seedId, extraHops: page.extraHops }));
  return (await context.admission.admitMany(found)).filter((added) => added === "queued").length;
}
