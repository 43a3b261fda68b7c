import { crawlKey, normalizeCrawlUrl, withoutHash } from "./urls.js";

export const SCOPE_TYPES = ["page", "page-spa", "prefix", "host", "domain", "any", "custom"] as const;
export type ScopeType = (typeof SCOPE_TYPES)[number];

export interface SeedScopeOptions {
  scopeType: ScopeType;
  include: RegExp[];
  exclude: RegExp[];
  /** Maximum link depth from the seed; -1 = unlimited. */
  depth: number;
  /** How many links past the edge of the scope may still be followed. */
  extraHops: number;
  /** --allowHashUrls: URLs that differ in their #fragment are different pages (absent: false). */
  allowHash?: boolean;
}

export type ScopeDecision =
  | { inScope: true; extraHops: number }
  | { inScope: false; reason: "excluded" | "out-of-scope" | "too-deep" };

/**
 * The scope of one seed: which discovered links are crawled as pages. As in browsertrix-crawler, the
 * scheme (http/https) and a leading "www." (or "www2." ...) of the seed's host do not matter: a site
 * that moves its visitors from http://x/ to https://www.x/ stays in its own scope.
 */
export class SeedScope {
  readonly url: string;
  private readonly include: RegExp[];

  constructor(seedUrl: string, private readonly options: SeedScopeOptions) {
    this.url = normalizeCrawlUrl(seedUrl, undefined, options.scopeType === "page-spa" || options.allowHash === true);
    this.include = [...options.include, ...this.implicitInclude()];
  }

  get scopeType(): ScopeType {
    return this.options.scopeType;
  }

  /** Fragments tell pages apart (--allowHashUrls): links keep theirs, and so do the queue's keys. */
  get allowHash(): boolean {
    return this.options.allowHash === true;
  }

  /** The same scope rules around another URL (a seed's redirect target, with --addRedirectedSeeds). */
  withUrl(url: string): SeedScope {
    return new SeedScope(url, this.options);
  }

  private implicitInclude(): RegExp[] {
    const seed = new URL(this.url);
    const host = escapeRegExp(seed.hostname.replace(/^www\d*\./, ""));
    const port = seed.port ? `:${seed.port}` : "";
    // Either scheme, with or without www<N>.: browsertrix-crawler's urlRxEscape.
    const origin = `https?://(www\\d*\\.)?${host}${escapeRegExp(port)}`;
    switch (this.options.scopeType) {
      case "prefix":
        return [new RegExp("^" + origin + escapeRegExp(seed.pathname.slice(0, seed.pathname.lastIndexOf("/") + 1)))];
      case "host":
        return [new RegExp("^" + origin + "/")];
      case "domain":
        return [new RegExp(`^https?://([^/]+\\.)?${host}(:\\d+)?/`)];
      case "any":
        return [/.*/];
      case "page":
      case "page-spa":
      case "custom":
        return [];
    }
  }

  /** Decide on a link found at `fromDepth` of a page that was itself `fromExtraHops` outside the scope. */
  decide(url: string, fromDepth: number, fromExtraHops: number): ScopeDecision {
    const depth = fromDepth + 1;
    if (this.options.depth >= 0 && depth > this.options.depth) return { inScope: false, reason: "too-deep" };
    if (this.options.exclude.some((rx) => rx.test(url))) return { inScope: false, reason: "excluded" };
    if (this.matches(url, false)) return { inScope: true, extraHops: 0 };
    const hops = fromExtraHops + 1;
    if (hops <= this.options.extraHops) return { inScope: true, extraHops: hops };
    return { inScope: false, reason: "out-of-scope" };
  }

  /**
   * Decide on a page a sitemap lists: judged like a link on the seed page, but with no extra hops
   * (a sitemap may list a whole site; only the pages in scope are crawled).
   */
  decideListed(url: string): ScopeDecision {
    return this.decide(url, 0, this.options.extraHops);
  }

  /** Does an --exclude of this scope match `url`? */
  excludes(url: string): boolean {
    return this.options.exclude.some((rx) => rx.test(url));
  }

  /** Is `url` inside this scope itself (not excluded, no extra hops, whatever the depth)? */
  covers(url: string): boolean {
    return !this.options.exclude.some((rx) => rx.test(url)) && this.matches(url, true);
  }

  /**
   * Whether `url` is in the scope's own URLs. A page scope is its one page: what the seed landed on may
   * differ in scheme or a leading www. (`variants`), but a link to such a variant is another URL, and a
   * page scope follows no link to another URL.
   */
  private matches(url: string, variants: boolean): boolean {
    if (this.options.scopeType === "page" && samePage(url, this.url, this.allowHash, variants)) return true;
    if (this.options.scopeType === "page-spa" && samePage(withoutHash(url), withoutHash(this.url), false, variants)) return true;
    return this.include.some((rx) => rx.test(url));
  }
}

/** One page, whatever the order of its query, and with `variants` whatever its scheme and a leading www. of its host. */
function samePage(a: string, b: string, keepHash: boolean, variants: boolean): boolean {
  const fold = (url: string) => (variants ? crawlKey(url, keepHash).replace(/^https?:\/\/(www\d*\.)?/, "") : crawlKey(url, keepHash));
  return fold(a) === fold(b);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
