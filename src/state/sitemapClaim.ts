import type { Redis } from "ioredis";
import type { Membership } from "./membership/membership.js";
import { ownerScript } from "./membership/ownerRule.js";

// Take on reading the sitemaps unless they were read, or a live process is reading them (a dead
// reader's claim is taken over, see ownerRule.ts).
const SITEMAP_CLAIM_LUA = ownerScript(`
-- KEYS: sitemapRead, fenced; ARGV: owner, heartbeatPrefix
local current = redis.call('GET', KEYS[1])
if current == 'done' then return 'done' end
if current and current ~= ARGV[1] and not take_over(ARGV[2] .. current, KEYS[2], current) then return 'busy' end
redis.call('SET', KEYS[1], ARGV[1])
return 'claimed'
`);

/** --useSitemap: the sitemaps are read once per crawl, by one process (a restart does not read them again once read). */
export class SitemapClaim {
  constructor(
    private readonly redis: Redis,
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

  async finish(): Promise<void> {
    await this.redis.set(this.membership.keys.sitemapRead, "done");
  }

  /** Whether a live process is still reading the sitemaps (their pages may still be queued). */
  async inProgress(): Promise<boolean> {
    const owner = await this.redis.get(this.membership.keys.sitemapRead);
    if (owner === null || owner === "done") return false;
    return this.membership.isAlive(owner);
  }
}
