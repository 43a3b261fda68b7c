// The capture's rules given on the command line, as data: the options (config/) name these without
// importing the code that applies them (originOverride.ts, rateLimitMatch.ts, pageStorage.ts).

/** One --originOverride: requests to `from` (an origin) go to `to` (an origin); the archive keeps `from`. */
export interface OriginOverrideRule {
  from: string;
  to: string;
}

/** One --rateLimitOnMatch rule: a text response matching `regex` (and, if not 0, answered `status`) is a rate-limit answer. */
export interface RateLimitMatchRule {
  regex: RegExp;
  /** 0: any status. */
  status: number;
}

/** What a tab's capture does beyond recording (browsertrix-crawler's --serviceWorker, --originOverride, --rateLimitOnMatch, --saveStorage). */
export interface TabCaptureOptions {
  bypassServiceWorker: boolean;
  originOverride: readonly OriginOverrideRule[];
  rateLimitOnMatch: readonly RateLimitMatchRule[];
  saveStorage: boolean;
  /** The login page of the crawl's --profile (or --loginUrl): a page redirected there has lost its session. */
  loginUrl?: string | null;
}

export const DEFAULT_TAB_CAPTURE: TabCaptureOptions = { bypassServiceWorker: true, originOverride: [], rateLimitOnMatch: [], saveStorage: false, loginUrl: null };
