import { resolve } from "node:path";
import { readFileSync } from "node:fs";
import { SCOPE_TYPES, type ScopeType, type SeedScopeOptions } from "../scope/seedScope.js";
import { normalizeCrawlUrl, UrlRefusedError } from "../scope/urls.js";
import { DEFAULT_DEDUPE_MIN_SIZE } from "../dedupe/deduplicator.js";
import { SCREENSHOT_KINDS, type ScreenshotKind } from "../page/screenshots.js";

/** --text targets (browsertrix-crawler's names): the pages.jsonl `text` field, a urn:text: record. */
export const TEXT_TARGETS = ["to-pages", "to-warc"] as const;
export type TextTarget = (typeof TEXT_TARGETS)[number];
import { robotsAgentOf } from "../robots/robotsTxt.js";
import type { SitemapOptions } from "../sitemap/sitemapSeeds.js";
import { parseW3cDate } from "../sitemap/w3cDate.js";
import { DEFAULT_BEHAVIORS, parseBehaviorList, type BehaviorName } from "../behaviors/behaviors.js";
import { profileOptions, type ProfileOptions, type RawProfileFlags } from "./groups/profileOptions.js";
import { OptionsError } from "./optionsError.js";
import { choiceList, integer, parseSize, regexList, seconds, splitList } from "./flagValues.js";
import { btxScreenshots, btxText, lowestLogLevel } from "./browsertrix/values.js";
import { rateLimitOptions, type RateLimitOptions, type RawRateLimitFlags } from "./groups/rateLimitOptions.js";
import { dedupeFlagOptions, type DedupeFlagOptions, type RawDedupeFlagFlags } from "./groups/dedupeFlagOptions.js";
import { tabCaptureOptions, type TabCaptureConfig, type RawTabCaptureFlags } from "./groups/tabCaptureOptions.js";
import { debugOptions, type DebugOptions, type RawDebugFlags } from "./groups/debugOptions.js";
import { blockOptions, type BlockOptions, type RawBlockFlags } from "./groups/blockOptions.js";
import { linkBehaviorOptions, type LinkBehaviorOptions, type RawLinkBehaviorFlags } from "./groups/linkBehaviorOptions.js";
import { outputOptions, type OutputOptions, type RawOutputFlags } from "./groups/outputOptions.js";
import { stateOptions, type RawStateFlags, type StateOptions } from "./groups/stateOptions.js";
import { pageLoadOptions, type PageLoadOptions, type RawPageLoadFlags } from "./groups/pageLoadOptions.js";
import { cappedPageLimit, lifecycleOptions, type LifecycleOptions, type RawLifecycleFlags } from "./groups/lifecycleOptions.js";
import { budgetOptions, type BudgetOptions, type RawBudgetFlags } from "./groups/budgetOptions.js";
import { captureModeOptions, type CaptureModeOptions, type RawCaptureModeFlags } from "./groups/captureModeOptions.js";
import { readStoreSettings, StoreSettingsError, type StoreSettings } from "../upload/storeSettings.js";
import { DEFAULT_MAX_RESOURCE_SIZE } from "../fetch/bodyLimits.js";
import { parseAddressAllowance, type AddressAllowance } from "../fetch/addressPolicy.js";
import type { RawProxyFlags } from "../proxy/proxySettings.js";

/** Everything a crawl run needs to know, validated. The one place a flag's meaning lives. */
export interface CrawlOptions {
  seeds: string[];
  /** The scope of each seed, in the order of `seeds`: the flags', or a config seed's own. */
  seedScopes: SeedScopeOptions[];
  crawlId: string;
  collection: string;
  cwd: string;
  scopeType: ScopeType;
  include: RegExp[];
  exclude: RegExp[];
  depth: number;
  extraHops: number;
  /** Max pages to crawl; 0 = unlimited. */
  limit: number;
  /** Seconds; 0 = unlimited. */
  timeLimit: number;
  /** Bytes of WARC data; 0 = unlimited. */
  sizeLimit: number;
  workers: number;
  /** Seconds. */
  pageLoadTimeout: number;
  /** Seconds to wait for the network to go quiet after load (a cap, not a sleep). */
  netIdleWait: number;
  maxPageRetries: number;
  /** Seconds to wait after each page. */
  pageExtraDelay: number;
  /** Seconds: page loads on one host start at least this far apart, across all processes. */
  minHostInterval: number;
  /** Stop the crawl once this many pages have failed; 0 = never. */
  failOnFailedLimit: number;
  generateWACZ: boolean;
  /** Re-crawl against the capture history: conditional page requests, change report. */
  refresh: boolean;
  /** Pages whose latest committed capture is younger than this many days are not fetched (0 = off). */
  skipFreshDays: number;
  rolloverSize: number;
  redisStoreUrl: string | null;
  /** Redis of the dedupe index; null = the crawl-state Redis. */
  redisDedupeUrl: string | null;
  /** Payloads smaller than this are always stored as full responses. */
  dedupeMinSize: number;
  userAgent: string | null;
  title: string | null;
  description: string | null;
  statsFilename: string | null;
  logging: string[];
  logLevel: "debug" | "info" | "warn" | "error";
  browserPath: string;
  headless: boolean;
  /** --text: where each page's extracted text goes; empty = not extracted. */
  text: TextTarget[];
  /** --screenshot: screenshots stored per page as urn:<kind>:<url> resource records. */
  screenshot: ScreenshotKind[];
  /** --useSitemap: queue the pages the seeds' sitemaps list; null = off. */
  sitemap: SitemapOptions | null;
  /** --robots: obey robots.txt for this product token; null = off. */
  robots: { agent: string } | null;
  /** In-page behaviors run on every page after its load wait; empty = none. */
  behaviors: BehaviorName[];
  /** Seconds the behaviors of one page may run. */
  behaviorTimeout: number;
  /** Seconds to sleep after the load wait, before the behaviors. */
  postLoadDelay: number;
  /** --allowHashUrls: URLs that differ in their #fragment are different pages. */
  allowHashUrls: boolean;
  /** --addRedirectedSeeds: a seed page that redirects out of its scope adds the redirect target as a seed. */
  addRedirectedSeeds: boolean;
  /** Pages answered with a rate limit (--rateLimitStatusCodes, --rateLimitMaxRetries, --rateLimitTimeout). */
  rateLimit: RateLimitOptions;
  /** Links and behaviors (--selectLinks, --clickSelector, --customBehaviors, --alwaysAddBehaviorLinks). */
  linkBehavior: LinkBehaviorOptions;
  /** Which failures fail the crawl, restarts, --overwrite, --dryRun, the health check (src/config/groups/lifecycleOptions.ts). */
  lifecycle: LifecycleOptions;
  /** Upload of finished WACZ files (STORE_* and WEBHOOK_URL environment variables); null = none. */
  store: StoreSettings | null;
  /** --maxResourceSize: bytes of one body kept at most (the rest dropped, WARC-Truncated: length). */
  maxResourceSize: number;
  /** --diskUtilization: stop gracefully once the collection's disk is used above this percent; 0 = off. */
  diskUtilization: number;
  /** --allowAddresses: addresses fetched beyond the default policy (see fetch/addressPolicy.ts). */
  allowAddresses: AddressAllowance;
  /** warcinfo fields, WARC file names, combined WARCs, CDXJ index, skipped-pages report (outputOptions.ts). */
  output: OutputOptions;
  /** --saveState files, resuming from one (--config), Redis lists for the Browsertrix service, log contexts. */
  state: StateOptions;
  /** How pages load, in what browser (--waitUntil, --netIdleMaxRequests, --lang, --userAgentSuffix, --mobileDevice, --extraChromeArgs). */
  pageLoad: PageLoadOptions;
  /** --dedupePagesMinDepth, --dedupeConcurrent (src/config/groups/dedupeFlagOptions.ts). */
  dedupeFlags: DedupeFlagOptions;
  /** Service workers, --originOverride, --saveStorage, --rateLimitOnMatch (tabCaptureOptions.ts). */
  tabCapture: TabCaptureConfig;
  /** --waitOnDone, --debugAccessBrowser, --debugAccessRedis (debugOptions.ts). */
  debugging: DebugOptions;
  /** --blockRules, --blockMessage, --blockAds, --adBlockMessage (blockOptions.ts, src/block/). */
  block: BlockOptions;
  /** --profile, --loginUrl (src/config/groups/profileOptions.ts). */ profile: ProfileOptions;
  /** Per-seed budgets (a config seed's limit, sizeLimit; --seedPageLimit, --seedSizeLimit), --maxPagesPerHost (budgetOptions.ts). */ budgets: BudgetOptions;
  /** --captureMode, --hybridLearnPages, --hybridVerifyEvery (captureModeOptions.ts). */
  capture: CaptureModeOptions;
}

export { OptionsError, parseSize };
export const DEFAULT_ROLLOVER_SIZE = 1_000_000_000;
/** --diskUtilization default, browsertrix-crawler's: stop at 90% of the disk used. */
export const DEFAULT_DISK_UTILIZATION = 90;

/** Raw values as commander hands them over (strings, string lists, booleans). */
export interface RawCrawlFlags extends RawRateLimitFlags, RawOutputFlags, RawStateFlags, RawPageLoadFlags, RawLinkBehaviorFlags, RawLifecycleFlags, RawDedupeFlagFlags, RawTabCaptureFlags, RawDebugFlags, RawProxyFlags, RawBlockFlags, RawProfileFlags, RawBudgetFlags, RawCaptureModeFlags {
  config?: string;
  url?: string[];
  /** Comma-separated URLs from the command line; from a config file also seeds with their own scope. */
  seeds?: (string | RawSeedSpec)[];
  seedFile?: string;
  crawlId?: string;
  collection?: string;
  cwd?: string;
  scopeType?: string;
  include?: string[];
  exclude?: string[];
  depth?: string;
  extraHops?: string;
  limit?: string;
  timeLimit?: string;
  sizeLimit?: string;
  workers?: string;
  pageLoadTimeout?: string;
  netIdleWait?: string;
  maxPageRetries?: string;
  pageExtraDelay?: string;
  minHostInterval?: string;
  failOnFailedLimit?: string;
  generateWACZ?: boolean;
  refresh?: boolean;
  skipFreshDays?: string;
  rolloverSize?: string;
  redisStoreUrl?: string;
  redisDedupeUrl?: string;
  dedupeMinSize?: string;
  userAgent?: string;
  title?: string;
  description?: string;
  statsFilename?: string;
  logging?: string;
  logLevel?: string;
  browserPath?: string;
  headful?: boolean;
  text?: string[];
  screenshot?: string[];
  useSitemap?: string | boolean;
  sitemapFromDate?: string;
  sitemapToDate?: string;
  robots?: boolean;
  robotsAgent?: string;
  behaviors?: string;
  behaviorTimeout?: string;
  postLoadDelay?: string;
  allowHashUrls?: boolean;
  addRedirectedSeeds?: boolean;
  maxResourceSize?: string;
  diskUtilization?: string;
  allowAddresses?: string[];
}

/** A seed object of a config file's `seeds:` (browsertrix-crawler's format): its values override the flags'. */
export interface RawSeedSpec {
  url: string;
  scopeType?: string;
  include?: string[];
  exclude?: string[];
  depth?: string;
  extraHops?: string;
  /** browsertrix-crawler's per-seed `allowHash`. */
  allowHashUrls?: boolean;
  /** browsertrix-crawler's per-seed `sitemap` (true, or a sitemap URL): crawl-wide here, see configFile.ts. */
  sitemap?: string | boolean;
  /** The seed's budget: pages, bytes (groups/budgetOptions.ts). */ limit?: string; sizeLimit?: string;
}

/** A seed's scope from scope flags (or a config seed's own values laid over them, as browsertrix-crawler does). */
function seedScope(flags: Pick<RawCrawlFlags, "scopeType" | "include" | "exclude" | "depth" | "extraHops" | "allowHashUrls">): SeedScopeOptions {
  const scopeType = (flags.scopeType ?? (flags.include?.length ? "custom" : "prefix")) as ScopeType;
  if (!SCOPE_TYPES.includes(scopeType)) {
    throw new OptionsError(`--scopeType must be one of ${SCOPE_TYPES.join(", ")}, got ${JSON.stringify(flags.scopeType)}`);
  }
  return {
    scopeType,
    include: regexList("include", flags.include),
    exclude: regexList("exclude", flags.exclude),
    depth: integer("depth", flags.depth, -1, -1),
    extraHops: integer("extraHops", flags.extraHops, 0, 0),
    allowHash: flags.allowHashUrls ?? false,
  };
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export function defaultCollectionName(now = new Date()): string {
  return "crawl-" + now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
}

export function resolveCrawlOptions(flags: RawCrawlFlags, env: NodeJS.ProcessEnv = process.env): CrawlOptions {
  const seedFlags = flags.seeds ?? [];
  const rawSeeds: (string | RawSeedSpec)[] = [...splitList(flags.url)];
  for (const seed of seedFlags) rawSeeds.push(...(typeof seed === "string" ? splitList([seed]) : [seed]));
  if (flags.seedFile) {
    let text: string;
    try {
      text = readFileSync(flags.seedFile, "utf8");
    } catch {
      throw new OptionsError(`--seedFile cannot be read: ${flags.seedFile}`);
    }
    rawSeeds.push(...text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith("#")));
  }
  if (rawSeeds.length === 0) throw new OptionsError("no seed URL given: use --url URL (or --seeds, --seedFile)");
  const seeds = rawSeeds.map((raw) => {
    try {
      return normalizeCrawlUrl(typeof raw === "string" ? raw : raw.url, undefined, true);
    } catch (err) {
      throw new OptionsError(`bad seed URL: ${(err as UrlRefusedError).message}`);
    }
  });
  const globalScope = seedScope(flags);
  const seedScopes = rawSeeds.map((raw) => {
    if (typeof raw === "string") return globalScope;
    try {
      return seedScope({ ...flags, ...raw });
    } catch (err) {
      if (err instanceof OptionsError) throw new OptionsError(`seed ${raw.url}: ${err.message.replace(/^--/, "")}`);
      throw err;
    }
  });

  const collection = flags.collection ?? defaultCollectionName();
  // "." and ".." would be the collections folder itself or its parent, not a collection of their own.
  if (!SAFE_NAME.test(collection) || /^\.+$/.test(collection)) {
    throw new OptionsError(`--collection may hold only letters, digits, '.', '_' and '-', and not only dots: ${JSON.stringify(collection)}`);
  }
  const crawlId = flags.crawlId ?? env.CRAWL_ID ?? collection;
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(crawlId) || crawlId.includes(" ")) {
    throw new OptionsError(`--crawlId may hold only letters, digits, '.', '_', ':' and '-': ${JSON.stringify(crawlId)}`);
  }

  for (const [name, value] of [["redisStoreUrl", flags.redisStoreUrl], ["redisDedupeUrl", flags.redisDedupeUrl]] as const) {
    if (value !== undefined && !/^rediss?:\/\/[^/]/.test(value)) {
      throw new OptionsError(`--${name} must be a redis:// or rediss:// URL, got ${JSON.stringify(value)}`);
    }
  }

  const logLevel = lowestLogLevel(flags.logLevel);
  const logging = splitList(flags.logging ? [flags.logging] : []);
  const screenshot = choiceList("screenshot", btxScreenshots(flags.screenshot), SCREENSHOT_KINDS);

  return {
    seeds,
    seedScopes,
    crawlId,
    collection,
    cwd: resolve(flags.cwd ?? "crawls"),
    ...globalScope,
    limit: cappedPageLimit(integer("limit", flags.limit, 0, 0), flags.maxPageLimit),
    timeLimit: integer("timeLimit", flags.timeLimit, 0, 0),
    sizeLimit: parseSize("sizeLimit", flags.sizeLimit, 0),
    workers: integer("workers", flags.workers, 1, 1),
    pageLoadTimeout: integer("pageLoadTimeout", flags.pageLoadTimeout, 90, 1),
    netIdleWait: integer("netIdleWait", flags.netIdleWait, 10, 0),
    maxPageRetries: integer("maxPageRetries", flags.maxPageRetries, 2, 0),
    pageExtraDelay: seconds("pageExtraDelay", flags.pageExtraDelay),
    minHostInterval: seconds("minHostInterval", flags.minHostInterval),
    failOnFailedLimit: integer("failOnFailedLimit", flags.failOnFailedLimit, 0, 0),
    generateWACZ: flags.generateWACZ ?? false,
    refresh: flags.refresh ?? false,
    skipFreshDays: seconds("skipFreshDays", flags.skipFreshDays),
    rolloverSize: parseSize("rolloverSize", flags.rolloverSize, DEFAULT_ROLLOVER_SIZE),
    redisStoreUrl: flags.redisStoreUrl ?? null,
    redisDedupeUrl: flags.redisDedupeUrl ?? null,
    dedupeMinSize: parseSize("dedupeMinSize", flags.dedupeMinSize, DEFAULT_DEDUPE_MIN_SIZE),
    userAgent: flags.userAgent ?? null,
    title: flags.title ?? null,
    description: flags.description ?? null,
    statsFilename: flags.statsFilename ?? null,
    logging: logging.length ? logging : ["stats"],
    logLevel: logging.includes("debug") ? "debug" : logLevel,
    browserPath: flags.browserPath ?? env.BROWSER_BIN ?? "/usr/bin/chromium",
    headless: !flags.headful,
    text: choiceList("text", btxText(flags.text), TEXT_TARGETS),
    screenshot,
    sitemap: sitemapOptions(flags),
    robots: flags.robots ? { agent: flags.robotsAgent ?? robotsAgentOf(flags.userAgent ?? null) } : null,
    ...behaviorOptions(flags),
    allowHashUrls: flags.allowHashUrls ?? false,
    addRedirectedSeeds: flags.addRedirectedSeeds ?? false,
    rateLimit: rateLimitOptions(flags),
    linkBehavior: linkBehaviorOptions(flags),
    lifecycle: lifecycleOptions(flags, env),
    tabCapture: tabCaptureOptions(flags),
    debugging: debugOptions(flags),
    block: blockOptions(flags),
    store: storeSettings(env),
    ...storageLimits(flags),
    allowAddresses: addressAllowance(flags.allowAddresses),
    output: outputOptions(flags, env),
    state: stateOptions(flags),
    dedupeFlags: dedupeFlagOptions(flags),
    pageLoad: pageLoadOptions(flags, env),
    profile: profileOptions(flags, resolve(flags.cwd ?? "crawls")), budgets: budgetOptions(flags, rawSeeds),
    capture: captureModeOptions(flags, { screenshots: screenshot.length, customLinkSelectors: (flags.selectLinks ?? []).some((v) => v.trim() !== "") }),
  };
}

function storeSettings(env: NodeJS.ProcessEnv): StoreSettings | null {
  try {
    return readStoreSettings(env);
  } catch (err) {
    if (err instanceof StoreSettingsError) throw new OptionsError(err.message);
    throw err;
  }
}

/** Per-body size cap and disk-use limit (checked while bodies are written). */
function storageLimits(flags: RawCrawlFlags): Pick<CrawlOptions, "maxResourceSize" | "diskUtilization"> {
  const maxResourceSize = parseSize("maxResourceSize", flags.maxResourceSize, DEFAULT_MAX_RESOURCE_SIZE);
  if (maxResourceSize < 1) throw new OptionsError("--maxResourceSize must be at least 1 byte");
  const diskUtilization = integer("diskUtilization", flags.diskUtilization, DEFAULT_DISK_UTILIZATION, 0);
  if (diskUtilization > 100) throw new OptionsError(`--diskUtilization is a percent (0-100; 0 = off), got ${diskUtilization}`);
  return { maxResourceSize, diskUtilization };
}

function sitemapOptions(flags: RawCrawlFlags): SitemapOptions | null {
  const period = (name: string, value: string | undefined) => {
    if (value === undefined) return null;
    const parsed = parseW3cDate(value);
    if (!parsed) throw new OptionsError(`--${name} must be an ISO date such as 2024-03-05 or 2024-03-05T12:00:00Z, got ${JSON.stringify(value)}`);
    return parsed;
  };
  const from = period("sitemapFromDate", flags.sitemapFromDate);
  const to = period("sitemapToDate", flags.sitemapToDate);
  if (flags.useSitemap === undefined || flags.useSitemap === false) {
    if (from || to) throw new OptionsError(`--${from ? "sitemapFromDate" : "sitemapToDate"} needs --useSitemap`);
    return null;
  }
  if (from && to && from.start > to.end) throw new OptionsError("--sitemapFromDate is after --sitemapToDate");
  let url: string | null = null;
  if (typeof flags.useSitemap === "string") {
    url = flags.useSitemap.trim();
    const base = "http://seed.invalid/";
    const parsed = URL.canParse(url, base) ? new URL(url, base) : null;
    if (!url || !parsed || !["http:", "https:"].includes(parsed.protocol)) {
      throw new OptionsError(`--useSitemap must be an http(s) URL or a path on the seed's site, got ${JSON.stringify(flags.useSitemap)}`);
    }
  }
  // A date names a period: from its first instant, to its last ("--sitemapToDate 2024-03-05" keeps the whole day).
  return { url, fromDate: from?.start ?? null, toDate: to?.end ?? null };
}

function addressAllowance(values: string[] | undefined): AddressAllowance {
  try {
    return parseAddressAllowance(splitList(values));
  } catch (err) {
    throw new OptionsError(`--allowAddresses ${(err as Error).message}`);
  }
}

function behaviorOptions(flags: RawCrawlFlags): Pick<CrawlOptions, "behaviors" | "behaviorTimeout" | "postLoadDelay"> {
  let behaviors: BehaviorName[];
  try {
    behaviors = flags.behaviors === undefined ? [...DEFAULT_BEHAVIORS] : parseBehaviorList(flags.behaviors);
  } catch (err) {
    throw new OptionsError(`--behaviors: ${(err as Error).message}`);
  }
  const behaviorTimeout = flags.behaviorTimeout === undefined ? 90 : seconds("behaviorTimeout", flags.behaviorTimeout);
  if (behaviorTimeout <= 0) throw new OptionsError(`--behaviorTimeout must be more than 0 seconds (--behaviors "" turns behaviors off)`);
  return { behaviors, behaviorTimeout, postLoadDelay: seconds("postLoadDelay", flags.postLoadDelay) };
}
