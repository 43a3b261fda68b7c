import type { Cluster, Redis } from "ioredis";
import type { Membership } from "./membership/membership.js";
import { ownerScript } from "../ownership/ownerRule.js";

// Take on reading the sitemaps unless they were read, or a live process is reading them (a dead
// reader's claim is taken over, see ownerRule.ts; a failed read is read again).
const SITEMAP_CLAIM_LUA = ownerScript(`
-- KEYS: sitemapRead, fenced; ARGV: owner, heartbeatPrefix
local current = redis.call('GET', KEYS[1])
if current == 'done' then return 'done' end
if current and current ~= 'failed' and current ~= ARGV[1] and not take_over(ARGV[2] .. current, KEYS[2], current) then return 'busy' end
redis.call('SET', KEYS[1], ARGV[1])
return 'claimed'
`);

// Only the reader settles its reading (one fenced meanwhile has handed it on).
const SITEMAP_SETTLE_LUA = `
-- KEYS: sitemapRead; ARGV: owner, outcome
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`;

/**
 * Where the sitemap reading of a crawl is: "none" (not asked for), "reading" (a live process reads),
 * "orphaned" (its reader died before the end: a live process must read them again), "done", or
 * "failed" (queueing their pages failed: the crawl cannot be complete; a rerun reads them again).
 */
export type SitemapReadState = "none" | "reading" | "orphaned" | "done" | "failed";

/**
 * --useSitemap: the sitemaps are read once per crawl, by one process at a time (a restart does not read
 * them again once read). If the reader dies, any live process takes the reading over and reads them
 * again from the start (queueing a page twice is harmless: the frontier admits a URL once).
 */
export class SitemapClaim {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly membership: Membership,
  ) {}

  /**
   * "claimed": this process reads them now (also when the one that started died before finishing);
   * "busy": a live process does; "done": they were read.
   */
  async claim(): Promise<"claimed" | "busy" | "done"> {
    const { keys, processId, heartbeatPrefix } = this.membership;
    return (await this.redis.eval(SITEMAP_CLAIM_LUA, 2, keys.sitemapRead, keys.fenced, processId, heartbeatPrefix)) as "claimed" | "busy" | "done";
  }

  /** Every sitemap was read and its pages queued. */
  async finish(): Promise<void> {
    await this.settle("done");
  }

  /** Queueing failed: the claim is let go (so no process waits for it) and the crawl cannot be done. */
  async fail(): Promise<void> {
    await this.settle("failed");
  }

  private async settle(outcome: "done" | "failed"): Promise<void> {
    const { keys, processId } = this.membership;
    await this.redis.eval(SITEMAP_SETTLE_LUA, 1, keys.sitemapRead, processId, outcome);
  }

  async state(): Promise<SitemapReadState> {
    const owner = await this.redis.get(this.membership.keys.sitemapRead);
    if (owner === null) return "none";
    if (owner === "done" || owner === "failed") return owner;
    return (await this.membership.isAlive(owner)) ? "reading" : "orphaned";
  }

  /** Whether the sitemaps' pages may still be queued: a live process reads them, or a dead one did not finish. */
  async inProgress(): Promise<boolean> {
    const state = await this.state();
    return state === "reading" || state === "orphaned";
  }
}
