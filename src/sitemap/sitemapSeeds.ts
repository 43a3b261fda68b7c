import type { PageAdmission, Admission } from "../scope/admission.js";
import type { SeedScope } from "../scope/seedScope.js";
import { tryNormalizeCrawlUrl } from "../scope/urls.js";
import { errorMessage, logger } from "../log/logger.js";
import type { RobotsTxt } from "../robots/robotsTxt.js";
import type { ConnectionRules } from "../fetch/connectionRules.js";
import type { QueuedPage } from "../frontier/frontier.js";
import type { SitemapClaim } from "../state/sitemapClaim.js";
import { pauseForTests } from "../util/testSeams.js";
import { readSitemaps, type SitemapEntry, type SitemapReadCounts } from "./sitemapReader.js";

export interface SitemapOptions {
  /** The sitemap (or robots.txt) to read, relative to each seed; null = find it from the seed's robots.txt, else /sitemap.xml. */
  url: string | null;
  /** Keep pages whose <lastmod> is at or after this. */
  fromDate: Date | null;
  /** Keep pages whose <lastmod> is at or before this. */
  toDate: Date | null;
}

/** What reading the sitemaps did, for the log. */
export interface SitemapQueueCounts extends SitemapReadCounts {
  /** Page entries listed (before any filter). */
  found: number;
  queued: number;
  /** In scope, but queued before (a link, a seed, or listed twice). */
  alreadyQueued: number;
  outOfScope: number;
  filteredByDate: number;
  /** Disallowed by robots.txt (--robots). */
  skippedRobots: number;
  /** On an address the crawler may not fetch (link-local, cloud metadata...). */
  forbiddenAddress: number;
  /** Not queued: their seed's budget or their host's page cap was spent (--seedPageLimit, --maxPagesPerHost...). */
  overBudget: number;
  /** Entries whose URL cannot be crawled (not http(s)). */
  invalid: number;
  limitReached: boolean;
}

export interface SitemapReading {
  /** Settles once the sitemaps are read (or reading stopped); never rejects. */
  finished: Promise<void>;
}

interface SitemapContext {
  /** Who reads the sitemaps of this crawl (once per crawl). */
  claim: SitemapClaim;
  admission: PageAdmission;
  scopes: SeedScope[];
  robotsTxt: RobotsTxt;
  /** The crawl is stopping: reading ends (a restart reads the sitemaps again). */
  stop: { readonly requested: boolean };
  userAgent: string | null;
  /** The crawl's address policy and --header rules, for the sitemaps' fetches. */
  rules: Pick<ConnectionRules, "addresses" | "headers">;
}

// Sitemap pages are queued in batches: one Redis round trip for many entries, yet bounded memory.
const BATCH = 200;

/**
 * --useSitemap: once per crawl (whichever process claims it first; a restart does not read the
 * sitemaps again once they were read), queue the pages the seeds' sitemaps list, through the seeds'
 * scopes, the page limit and robots.txt, in the background while pages are crawled. A sitemap that
 * cannot be fetched is a warning; pages that cannot be queued fail the reading (see SitemapClaim.fail).
 * Called again by a process that finds the reader dead: the reading starts over, idempotently.
 */
export async function startSitemapReading(options: SitemapOptions, context: SitemapContext): Promise<SitemapReading> {
  const claim = await context.claim.claim();
  if (claim !== "claimed") {
    logger.info("sitemap", claim === "done" ? "sitemaps already read in this crawl" : "another crawler process is reading the sitemaps");
    return { finished: Promise.resolve() };
  }
  const finished = queueSitemapPages(options, context)
    .then(
      async (complete) => {
        if (complete) await context.claim.finish();
      },
      async (err: unknown) => {
        // Let the claim go, so that no worker waits for pages that will not come; the crawl is not done.
        logger.error("sitemap", "reading the sitemaps failed: the crawl cannot be complete; a rerun reads them again", { error: errorMessage(err) });
        await context.claim.fail();
      },
    )
    .catch((err: unknown) => logger.warn("sitemap", "cannot record how the sitemap reading ended", { error: errorMessage(err) }));
  return { finished };
}

/** Returns whether every sitemap was gone through (false when the crawl was stopped meanwhile). */
async function queueSitemapPages(options: SitemapOptions, context: SitemapContext): Promise<boolean> {
  const counts: SitemapQueueCounts = {
    sitemaps: 0, failed: 0, skipped: 0, found: 0, queued: 0, alreadyQueued: 0, outOfScope: 0, filteredByDate: 0, skippedRobots: 0, forbiddenAddress: 0, overBudget: 0, invalid: 0, limitReached: false,
  };
  // Seeds that share their sitemaps (the same site, or one --useSitemap URL) have them read once.
  const groups = new Map<string, { roots: string[]; seedIds: number[] }>();
  for (const [seedId, scope] of context.scopes.entries()) {
    const roots = await sitemapsOf(scope.url, options.url, context.robotsTxt);
    const key = roots.join(" ");
    const group = groups.get(key) ?? { roots, seedIds: [] };
    group.seedIds.push(seedId);
    groups.set(key, group);
  }
  logger.info("sitemap", "reading sitemaps", { sitemaps: [...groups.values()].flatMap((g) => g.roots), from: options.fromDate?.toISOString() ?? null, to: options.toDate?.toISOString() ?? null });

  let complete = true;
  for (const { roots, seedIds } of groups.values()) {
    const entries = readSitemaps(roots, { rules: context.rules, userAgent: context.userAgent, notBefore: options.fromDate }, counts);
    let batch: SitemapEntry[] = [];
    const flush = async () => {
      await pauseForTests("sitemap-queue");
      // One admission for the batch: its pages' budgets and the queue asked in a round trip or two, not one a page.
      const pages = batch.map((entry) => pageOf(entry, seedIds, options, context, counts)).filter((page): page is QueuedPage => page !== null);
      batch = [];
      const outcomes = pages.length ? await context.admission.admitMany(pages) : [];
      for (const outcome of outcomes) tally(outcome, counts);
      return outcomes.includes("limit");
    };
    for await (const entry of entries) {
      counts.found += 1;
      batch.push(entry);
      if (batch.length < BATCH) continue;
      if (await flush()) counts.limitReached = true;
      if (counts.limitReached || context.stop.requested) break;
    }
    if (!counts.limitReached && !context.stop.requested && (await flush())) counts.limitReached = true;
    if (counts.limitReached) break;
    if (context.stop.requested) {
      complete = false;
      break;
    }
  }
  const { found, queued, alreadyQueued, outOfScope, filteredByDate, skippedRobots, forbiddenAddress, overBudget, invalid, limitReached, sitemaps, failed, skipped } = counts;
  logger.info("sitemap", complete ? "sitemaps read" : "reading the sitemaps stopped with the crawl: a restart reads them again", {
    found, queued, alreadyQueued, outOfScope, filteredByDate, skippedRobots, forbiddenAddress, ...(overBudget ? { overBudget } : {}), invalid, limitReached, sitemaps, failedSitemaps: failed, sitemapsNotRead: skipped,
  });
  return complete;
}

/** The page a sitemap entry lists, or null (counted) when its date, its URL or the seeds' scopes leave it out. */
function pageOf(entry: SitemapEntry, seedIds: number[], options: SitemapOptions, context: SitemapContext, counts: SitemapQueueCounts): QueuedPage | null {
  // Pages without a <lastmod> are kept whatever the dates (as browsertrix-crawler does).
  if (entry.lastmod && ((options.fromDate && entry.lastmod < options.fromDate) || (options.toDate && entry.lastmod > options.toDate))) {
    counts.filteredByDate += 1;
    return null;
  }
  const url = tryNormalizeCrawlUrl(entry.url);
  if (!url) {
    counts.invalid += 1;
    return null;
  }
  const seedId = seedIds.find((id) => context.scopes[id].decideListed(url).inScope);
  if (seedId === undefined) {
    counts.outOfScope += 1;
    context.admission.outOfScope({ url, depth: 1, seedId: seedIds[0] ?? 0, extraHops: 0 });
    return null;
  }
  return { url, depth: 1, seedId, extraHops: 0 };
}

function tally(outcome: Admission, counts: SitemapQueueCounts): void {
  if (outcome === "queued") counts.queued += 1;
  else if (outcome === "seen") counts.alreadyQueued += 1;
  else if (outcome === "robots") counts.skippedRobots += 1;
  else if (outcome === "address") counts.forbiddenAddress += 1;
  else if (outcome === "budget") counts.overBudget += 1;
}

/** The sitemaps of a seed: the given one (resolved against the seed), else its robots.txt's Sitemap: lines, else /sitemap.xml. */
async function sitemapsOf(seedUrl: string, given: string | null, robotsTxt: RobotsTxt): Promise<string[]> {
  const origin = new URL(seedUrl).origin;
  if (given !== null) {
    const url = new URL(given, seedUrl);
    if (url.pathname !== "/robots.txt") return [url.href];
    const rules = await robotsTxt.rulesFor(url.origin);
    return rules.sitemaps.length ? rules.sitemaps : [];
  }
  const rules = await robotsTxt.rulesFor(origin);
  return rules.sitemaps.length ? rules.sitemaps : [`${origin}/sitemap.xml`];
}
