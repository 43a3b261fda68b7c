import type { Readable } from "node:stream";
import robotsParserModule from "robots-parser";
import { errorMessage, logger } from "../log/logger.js";
import { discard, plainFetch } from "../fetch/plainFetch.js";
import type { ConnectionRules } from "../fetch/connectionRules.js";

/** What one host's robots.txt says, as far as this crawler is concerned. */
export type RobotsRules =
  /** Parsed rules (a 2xx robots.txt). */
  | { kind: "rules"; isAllowed(url: string, agent: string): boolean; sitemaps: string[]; crawlDelaySeconds(agent: string): number | null }
  /** No robots.txt (4xx, or redirected too often): everything is allowed (RFC 9309 2.3.1.2-3). */
  | { kind: "allow-all"; sitemaps: [] }
  /** Unreachable (5xx, 429, network error, timeout, a redirect to a forbidden address): nothing is allowed until `until` (RFC 9309 2.3.1.4). */
  | { kind: "unreachable"; until: number; sitemaps: []; status: number | null };

export type RobotsVerdict = { allowed: true } | { allowed: false; reason: "disallowed" | "robots.txt unreachable" };

export interface RobotsTxtOptions {
  /** The crawl's address policy and --header rules (fetch/connectionRules.ts). */
  rules: Pick<ConnectionRules, "addresses" | "headers">;
  userAgent: string | null;
  /** Product token matched against robots.txt User-agent lines. */
  agent: string;
  /** Time allowed for the whole fetch of a robots.txt (a total deadline: a server dripping bytes cannot hold it). */
  timeoutMs?: number;
  /** How long an unreachable robots.txt keeps its host disallowed before it is asked for again. */
  unreachableRetryMs?: number;
  /** How many hosts' rules are kept (least recently used go first; they are fetched again if needed). */
  maxOrigins?: number;
}

interface ParsedRobots {
  isAllowed(url: string, agent?: string): boolean | undefined;
  getSitemaps(): string[];
  getCrawlDelay(agent?: string): number | undefined;
}
// The package is CommonJS (module.exports = the parser function); its typings describe it loosely.
const robotsParser = robotsParserModule as unknown as (url: string, text: string) => ParsedRobots;

// RFC 9309 2.5: parse at least the first 500 KiB.
const MAX_ROBOTS_BYTES = 512 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_UNREACHABLE_RETRY_MS = 10 * 60_000;
// A crawl across many hosts (--scopeType any, --extraHops) must not keep every host's rules for ever.
// Rules are a few KB typically (512 KiB at most, see above).
const DEFAULT_MAX_ORIGINS = 1000;
/** The longest Crawl-delay obeyed (Heritrix's respectCrawlDelayUpToSeconds default): 5 minutes. */
export const MAX_CRAWL_DELAY_MS = 300_000;

/**
 * robots.txt of each host (scheme, host and port), fetched once per process and kept in memory (the
 * `maxOrigins` most recently used); one that was unreachable is asked for again after a while. Used to obey it (--robots) and to find
 * Sitemap: lines (--useSitemap).
 */
export class RobotsTxt {
  private readonly byOrigin = new Map<string, Promise<RobotsRules>>();

  constructor(private readonly options: RobotsTxtOptions) {}

  get agent(): string {
    return this.options.agent;
  }

  /** Whether the crawler may load `url` as a page. */
  async check(url: string): Promise<RobotsVerdict> {
    const rules = await this.rulesFor(new URL(url).origin);
    switch (rules.kind) {
      case "allow-all":
        return { allowed: true };
      case "unreachable":
        return { allowed: false, reason: "robots.txt unreachable" };
      case "rules":
        return rules.isAllowed(url, this.options.agent) ? { allowed: true } : { allowed: false, reason: "disallowed" };
    }
  }

  /**
   * How far apart page loads on `url`'s host must start by its robots.txt `Crawl-delay` for our agent
   * (0: none), at most MAX_CRAWL_DELAY_MS: a site asking for an hour between pages would never finish.
   */
  async crawlDelayMs(url: string): Promise<number> {
    const rules = await this.rulesFor(new URL(url).origin);
    const seconds = rules.kind === "rules" ? rules.crawlDelaySeconds(this.options.agent) : null;
    return seconds === null ? 0 : Math.min(Math.round(seconds * 1000), MAX_CRAWL_DELAY_MS);
  }

  /** Hosts whose rules are kept now. */
  get cachedOrigins(): number {
    return this.byOrigin.size;
  }

  async rulesFor(origin: string): Promise<RobotsRules> {
    const cached = this.byOrigin.get(origin);
    if (cached) {
      // Least recently used first: a Map iterates in insertion order, so a use moves it to the end.
      this.byOrigin.delete(origin);
      this.byOrigin.set(origin, cached);
      const rules = await cached;
      if (rules.kind !== "unreachable" || rules.until > Date.now()) return rules;
    }
    const fetching = this.fetchRules(origin);
    this.byOrigin.delete(origin);
    this.byOrigin.set(origin, fetching);
    const max = this.options.maxOrigins ?? DEFAULT_MAX_ORIGINS;
    for (const oldest of this.byOrigin.keys()) {
      if (this.byOrigin.size <= max) break;
      this.byOrigin.delete(oldest);
    }
    return fetching;
  }

  private async fetchRules(origin: string): Promise<RobotsRules> {
    const robotsUrl = `${origin}/robots.txt`;
    const unreachable = (status: number | null, detail: string): RobotsRules => {
      logger.warn("robots", "robots.txt unreachable: no page of this host is crawled for now (RFC 9309)", { url: robotsUrl, status, error: detail });
      return { kind: "unreachable", until: Date.now() + (this.options.unreachableRetryMs ?? DEFAULT_UNREACHABLE_RETRY_MS), sitemaps: [], status };
    };
    try {
      const response = await plainFetch(robotsUrl, {
        rules: this.options.rules,
        userAgent: this.options.userAgent,
        timeoutMs: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxBytes: Number.MAX_SAFE_INTEGER,
      });
      const { status } = response;
      if (status >= 200 && status < 300) {
        const text = await readUpTo(response.body, MAX_ROBOTS_BYTES);
        const robot = robotsParser(robotsUrl, text);
        const sitemaps = robot.getSitemaps();
        logger.info("robots", "robots.txt read", { url: robotsUrl, status, sitemaps: sitemaps.length });
        return {
          kind: "rules", isAllowed: (url, agent) => robot.isAllowed(url, agent) !== false, sitemaps,
          crawlDelaySeconds: (agent) => {
            const delay = Number(robot.getCrawlDelay(agent));
            return Number.isFinite(delay) && delay > 0 ? delay : null;
          },
        };
      }
      discard(response.body);
      // Too Many Requests says the server is overloaded, not that there are no rules: treated like a 5xx.
      if (status === 429 || status >= 500) {
        return unreachable(status, `HTTP ${status}`);
      }
      logger.info("robots", "no robots.txt: every page of this host may be crawled", { url: robotsUrl, status });
      return { kind: "allow-all", sitemaps: [] };
    } catch (err) {
      return unreachable(null, errorMessage(err));
    }
  }
}

async function readUpTo(body: Readable, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = Buffer.from(chunk as Buffer);
    chunks.push(buffer.subarray(0, maxBytes - size));
    size += buffer.length;
    if (size >= maxBytes) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The robots.txt product token of a User-Agent string: "MyBot" of "Mozilla/5.0 (compatible; MyBot/2.1;
 * +https://...)", "archiver" of "archiver/1.0", else the crawler's own name.
 */
export function robotsAgentOf(userAgent: string | null): string {
  if (!userAgent) return DEFAULT_ROBOTS_AGENT;
  const compatible = /compatible;\s*([A-Za-z0-9_-]+)/.exec(userAgent);
  if (compatible) return compatible[1];
  const first = /^([A-Za-z0-9_-]+)/.exec(userAgent.trim());
  return first && first[1].toLowerCase() !== "mozilla" ? first[1] : DEFAULT_ROBOTS_AGENT;
}

export const DEFAULT_ROBOTS_AGENT = "warc-crawler";
