import { normalizeCrawlUrl } from "./urls.js";

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
}

export type ScopeDecision =
  | { inScope: true; extraHops: number }
  | { inScope: false; reason: "excluded" | "out-of-scope" | "too-deep" };

/** The scope of one seed: which discovered links are crawled as pages. */
export class SeedScope {
  readonly url: string;
  private readonly include: RegExp[];

  constructor(seedUrl: string, private readonly options: SeedScopeOptions) {
    this.url = normalizeCrawlUrl(seedUrl, undefined, options.scopeType === "page-spa");
    this.include = [...options.include, ...this.implicitInclude()];
  }

  get scopeType(): ScopeType {
    return this.options.scopeType;
  }

  private implicitInclude(): RegExp[] {
    const seed = new URL(this.url);
    switch (this.options.scopeType) {
      case "prefix": {
        const prefix = new URL(".", seed).href;
        return [new RegExp("^" + escapeRegExp(prefix))];
      }
      case "host":
        return [new RegExp("^" + escapeRegExp(seed.origin) + "/")];
      case "domain": {
        const domain = seed.hostname.replace(/^www\./, "");
        return [new RegExp(`^${escapeRegExp(seed.protocol)}//([^/]+\\.)?${escapeRegExp(domain)}(:\\d+)?/`)];
      }
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
    if (this.matches(url)) return { inScope: true, extraHops: 0 };
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

  private matches(url: string): boolean {
    if (this.options.scopeType === "page" && url === this.url) return true;
    if (this.options.scopeType === "page-spa" && url.split("#")[0] === this.url.split("#")[0]) return true;
    return this.include.some((rx) => rx.test(url));
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
