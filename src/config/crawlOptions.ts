import { resolve } from "node:path";
import { readFileSync } from "node:fs";
import { SCOPE_TYPES, type ScopeType } from "../crawl/scope.js";
import { normalizeCrawlUrl, UrlRefusedError } from "../crawl/urls.js";
import { DEFAULT_DEDUPE_MIN_SIZE } from "../dedupe/deduplicator.js";
import { BEHAVIOR_NAMES, parseBehaviorList, type BehaviorName } from "../browser/behaviors.js";

/** Everything a crawl run needs to know, validated. The one place a flag's meaning lives. */
export interface CrawlOptions {
  seeds: string[];
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
  /** In-page behaviors run on every page after its load wait; empty = none. */
  behaviors: BehaviorName[];
  /** Seconds the behaviors of one page may run. */
  behaviorTimeout: number;
  /** Seconds to sleep after the load wait, before the behaviors. */
  postLoadDelay: number;
}

export class OptionsError extends Error {}

export const DEFAULT_ROLLOVER_SIZE = 1_000_000_000;

/** Raw values as commander hands them over (strings, string lists, booleans). */
export interface RawCrawlFlags {
  url?: string[];
  seeds?: string[];
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
  behaviors?: string;
  behaviorTimeout?: string;
  postLoadDelay?: string;
}

function integer(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value.trim())) throw new OptionsError(`--${name} must be a whole number, got ${JSON.stringify(value)}`);
  const parsed = Number.parseInt(value, 10);
  if (parsed < min) throw new OptionsError(`--${name} must be at least ${min}, got ${parsed}`);
  return parsed;
}

function seconds(name: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const parsed = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !Number.isFinite(parsed)) {
    throw new OptionsError(`--${name} must be a number of seconds, got ${JSON.stringify(value)}`);
  }
  return parsed;
}

/** Accepts plain bytes or a unit suffix: 500000, 64KB, 10MB, 1.5GB. */
export function parseSize(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const match = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb)?$/i.exec(value.trim());
  if (!match) throw new OptionsError(`--${name} must be a size like 1000000, 64KB, 10MB or 1GB, got ${JSON.stringify(value)}`);
  const units: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12 };
  return Math.round(Number(match[1]) * units[(match[2] ?? "b").toLowerCase()]);
}

function regexList(name: string, values: string[] | undefined): RegExp[] {
  return (values ?? []).map((source) => {
    try {
      return new RegExp(source);
    } catch (err) {
      throw new OptionsError(`--${name} is not a valid regular expression: ${JSON.stringify(source)}`);
    }
  });
}

function splitList(values: string[] | undefined): string[] {
  return (values ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function defaultCollectionName(now = new Date()): string {
  return "crawl-" + now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
}

export function resolveCrawlOptions(flags: RawCrawlFlags, env: NodeJS.ProcessEnv = process.env): CrawlOptions {
  const rawSeeds = [...splitList(flags.url), ...splitList(flags.seeds)];
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
      return normalizeCrawlUrl(raw, undefined, true);
    } catch (err) {
      throw new OptionsError(`bad seed URL: ${(err as UrlRefusedError).message}`);
    }
  });

  const scopeType = (flags.scopeType ?? (flags.include?.length ? "custom" : "prefix")) as ScopeType;
  if (!SCOPE_TYPES.includes(scopeType)) {
    throw new OptionsError(`--scopeType must be one of ${SCOPE_TYPES.join(", ")}, got ${JSON.stringify(flags.scopeType)}`);
  }

  const collection = flags.collection ?? defaultCollectionName();
  if (!SAFE_NAME.test(collection)) {
    throw new OptionsError(`--collection may hold only letters, digits, '.', '_' and '-': ${JSON.stringify(collection)}`);
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

  const logLevel = (flags.logLevel ?? "info") as CrawlOptions["logLevel"];
  if (!["debug", "info", "warn", "error"].includes(logLevel)) {
    throw new OptionsError(`--logLevel must be debug, info, warn or error`);
  }
  const logging = splitList(flags.logging ? [flags.logging] : []);

  return {
    seeds,
    crawlId,
    collection,
    cwd: resolve(flags.cwd ?? "crawls"),
    scopeType,
    include: regexList("include", flags.include),
    exclude: regexList("exclude", flags.exclude),
    depth: integer("depth", flags.depth, -1, -1),
    extraHops: integer("extraHops", flags.extraHops, 0, 0),
    limit: integer("limit", flags.limit, 0, 0),
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
    ...behaviorOptions(flags),
  };
}

function behaviorOptions(flags: RawCrawlFlags): Pick<CrawlOptions, "behaviors" | "behaviorTimeout" | "postLoadDelay"> {
  let behaviors: BehaviorName[];
  try {
    behaviors = flags.behaviors === undefined ? [...BEHAVIOR_NAMES] : parseBehaviorList(flags.behaviors);
  } catch (err) {
    throw new OptionsError(`--behaviors: ${(err as Error).message}`);
  }
  const behaviorTimeout = flags.behaviorTimeout === undefined ? 90 : seconds("behaviorTimeout", flags.behaviorTimeout);
  if (behaviorTimeout <= 0) throw new OptionsError(`--behaviorTimeout must be more than 0 seconds (--behaviors "" turns behaviors off)`);
  return { behaviors, behaviorTimeout, postLoadDelay: seconds("postLoadDelay", flags.postLoadDelay) };
}
