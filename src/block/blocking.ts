import { logger } from "../log/logger.js";
import type { AdHostList } from "./adHosts.js";
import { judgeByRules, type BlockRule } from "./rules.js";

/**
 * What this crawler process blocks (--blockRules, --blockAds) and where it reports it: one per process,
 * set by the crawl before any tab opens (as the address policy is), asked by every tab's capture and by
 * the crawler's own fetches for the archive. A blocked request is never sent (or, for a text rule, never
 * rendered nor stored), never archived, and never a failure: it is counted and reported.
 */
export interface BlockSettings {
  rules: readonly BlockRule[];
  /** --blockAds: the ad and tracker host list; null without --blockAds. */
  adHosts: AdHostList | null;
  /** --blockMessage: shown (HTML) in a frame whose document a rule blocked; "" = none. */
  blockMessage: string;
  /** --adBlockMessage: shown in a frame whose document is on an ad host; "" = none. */
  adBlockMessage: string;
}

/** One blocked request, as reported (reports/blocked.jsonl). */
export interface BlockedRequest {
  url: string;
  /** "rule": one of --blockRules (`rule` holds it as given); "ad host": the listed host in `rule`. */
  by: "rule" | "ad host";
  rule: string;
  /** The page being crawled when it was blocked (null: a fetch outside any page). */
  page: string | null;
  /** The frame the request was made in (for a frame's own document, the frame holding it). */
  frameUrl: string | null;
  /** The browser's resource type (Document for a frame's document, Script, Image...), or "Direct". */
  resourceType: string;
}

export type BlockListener = (blocked: BlockedRequest) => void;

/** A request about to be sent, as blocking sees it. */
export interface BlockQuery {
  url: string;
  /** URL of the frame the request is made in, "" when none is known (a service worker, a direct fetch). */
  frameUrl: string;
  /** A frame's own document (never the page's: pages are never blocked). */
  navigation: boolean;
}

export type BlockVerdict =
  | { action: "allow" }
  | { action: "block"; by: BlockedRequest["by"]; rule: string; message: string }
  | { action: "checkText"; rule: BlockRule; message: string };

const ALLOW: BlockVerdict = { action: "allow" };

export class Blocking {
  private listener: BlockListener = () => undefined;
  /** Ad hosts pages were crawled on, said once each. */
  private readonly warnedPageHosts = new Set<string>();

  constructor(readonly settings: BlockSettings) {}

  /** Whether anything can be blocked at all (no rules, no ad list: the tabs skip the checks). */
  get active(): boolean {
    return this.settings.rules.length > 0 || this.settings.adHosts !== null;
  }

  onBlocked(listener: BlockListener): void {
    this.listener = listener;
  }

  /** The verdict on one request: the ad host list first, then the rules. */
  judge(query: BlockQuery): BlockVerdict {
    const { adHosts, rules, blockMessage, adBlockMessage } = this.settings;
    if (adHosts) {
      const host = adListHostOf(query.url);
      const listed = host ? adHosts.match(host) : null;
      if (listed) return { action: "block", by: "ad host", rule: listed, message: adBlockMessage };
    }
    const verdict = judgeByRules(rules, query);
    if (verdict.action === "block") return { action: "block", by: "rule", rule: verdict.rule.text, message: blockMessage };
    if (verdict.action === "checkText") return { action: "checkText", rule: verdict.rule, message: blockMessage };
    return ALLOW;
  }

  /**
   * A page's own document is never blocked (--exclude keeps pages out): one on an ad host is said once per
   * listed host (browsertrix-crawler blocks it, and the page fails).
   */
  pageDocument(url: string): void {
    const host = this.settings.adHosts ? adListHostOf(url) : null;
    const listed = host ? this.settings.adHosts?.match(host) : null;
    if (!listed || this.warnedPageHosts.has(listed) || this.warnedPageHosts.size >= 1000) return;
    this.warnedPageHosts.add(listed);
    logger.warn("blocking", "a page on an ad host is crawled all the same: pages are never blocked (--exclude keeps them out)", { url, adHost: listed });
  }

  /**
   * For the crawler's own fetches of what it archives (outside the browser): whether `url` is blocked,
   * judged as a request of no frame (the ad list, and the rules without inFrameUrl or frameTextMatch);
   * recorded when it is.
   */
  blockedOutsideBrowser(url: string, page: string | null = null): boolean {
    const verdict = this.judge({ url, frameUrl: "", navigation: false });
    if (verdict.action !== "block") return false;
    this.record({ url, by: verdict.by, rule: verdict.rule, page, frameUrl: null, resourceType: "Direct" });
    return true;
  }

  /** Report a blocked request (count, report line, debug log): the listener set by the crawl. */
  record(blocked: BlockedRequest): void {
    this.listener(blocked);
  }
}

/** The host name an ad host list is matched against (no port); null for a URL that does not parse. */
function adListHostOf(url: string): string | null {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
}
