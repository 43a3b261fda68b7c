import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { loadAdHosts, type AdHostList } from "../block/adHosts.js";
import { Blocking, type BlockedRequest } from "../block/blocking.js";
import type { BlockOptions } from "../config/groups/blockOptions.js";
import { errorMessage, logger } from "../log/logger.js";
import type { Frontier } from "../frontier/frontier.js";

/** Distinct blocked URLs remembered per process; past this a URL blocked again may be listed again. */
const REMEMBERED = 100_000;
/** Blocked requests are added to the crawl's count (Redis) at most this often. */
const COUNT_EVERY_MS = 500;

/** --blockAds: the ad host list, read before the crawl starts (a missing list stops it at once). */
export function adHostsFor(options: BlockOptions): AdHostList | null {
  if (!options.blockAds) return null;
  const started = performance.now();
  const list = loadAdHosts();
  logger.info("blocking", "ad host list loaded", { list: list.name, version: list.version, source: list.source, hosts: list.size, ms: Math.round(performance.now() - started) });
  return list;
}

/**
 * What this process blocked (--blockRules, --blockAds): each blocked request counted in the crawl's Redis
 * (summed over the crawl's processes, kept across resumes) and each blocked URL listed once per process
 * in reports/blocked.jsonl, {url, by, rule, page, frameUrl, resourceType, ts}: by "rule" (the rule as
 * given) or "ad host" (the listed host). Packaged into the WACZ under reports/.
 */
export class BlockedReport {
  private readonly listed = new Set<string>();
  private unsent = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();
  private warned = false;
  /** The report's folder exists: made once, not on every blocked URL. */
  private folderMade = false;

  constructor(
    readonly path: string,
    private readonly state: Frontier,
    readonly adHosts: AdHostList | null,
  ) {}

  add(blocked: BlockedRequest): void {
    logger.debug("blocking", "request blocked", { ...blocked });
    this.unsent++;
    this.timer ??= setTimeout(() => void this.flush(), COUNT_EVERY_MS);
    if (this.listed.has(blocked.url)) return;
    if (this.listed.size < REMEMBERED) this.listed.add(blocked.url);
    try {
      if (!this.folderMade) mkdirSync(dirname(this.path), { recursive: true });
      this.folderMade = true;
      appendFileSync(this.path, JSON.stringify({ ...blocked, ts: new Date().toISOString() }) + "\n");
    } catch (err) {
      this.warn("cannot write the blocked-requests report", err);
    }
  }

  /** Add what was blocked since the last time to the crawl's count; call before the counts are read. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const n = this.unsent;
    this.unsent = 0;
    if (n > 0) {
      this.sending = this.sending.then(() => this.state.countBlocked(n)).catch((err: unknown) => {
        this.unsent += n;
        this.warn("cannot count blocked requests in Redis (retried)", err);
      });
    }
    return this.sending;
  }

  private warn(message: string, err: unknown): void {
    if (this.warned) return;
    this.warned = true;
    logger.warn("blocking", message, { path: this.path, error: errorMessage(err) });
  }
}

/**
 * The crawl's blocking (the run context hands it to the tabs and the direct fetches) and its report (`blocked`);
 * both null when nothing is blocked.
 */
export function startBlocking(options: BlockOptions, adHosts: AdHostList | null, path: string, state: Frontier): { blocking: Blocking | null; blocked: BlockedReport | null } {
  const blocking = new Blocking({ rules: options.rules, adHosts, blockMessage: options.blockMessage, adBlockMessage: options.adBlockMessage });
  if (!blocking.active) return { blocking: null, blocked: null };
  const report = new BlockedReport(path, state, adHosts);
  blocking.onBlocked((blocked) => report.add(blocked));
  if (options.rules.length) logger.info("blocking", "block rules", { rules: options.rules.map((r) => r.text) });
  return { blocking, blocked: report };
}
