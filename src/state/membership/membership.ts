import type { Cluster, Redis } from "ioredis";
import { crawlStateKeys, type CrawlStateKeys } from "../stateKeys.js";
import { ownerScript } from "../../ownership/ownerRule.js";
import { isLocalProcessGone } from "../../ownership/processIdentity.js";

/** Default heartbeat lifetime: a process is taken for dead this long after its last renewal. */
export const HEARTBEAT_TTL_MS = 15_000;

// Renew our heartbeat, unless we were taken for dead meanwhile.
const HEARTBEAT_LUA = `
-- KEYS: heartbeat, fenced; ARGV: owner, ttlMs, now
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'PX', tonumber(ARGV[2]))
return 1
`;

// Declare a process dead, atomically with the check that its heartbeat is gone.
const FENCE_LUA = ownerScript(`
-- KEYS: heartbeat, fenced; ARGV: owner
return take_over(KEYS[1], KEYS[2], ARGV[1]) and 1 or 0
`);

/** Who holds the frontier's page leases (Frontier: it knows its shards). */
export interface LeaseHolders {
  leaseHolders(): Promise<string[]>;
}

/**
 * This process as a member of a shared crawl: its identity, its heartbeat, and the ownership rule
 * (ownerRule.ts) as TypeScript code asks it: is that owner alive, and fence it if it is not. Several
 * crawler processes share one crawl; each holds pages, claims and a writer slot under its process id.
 */
export class Membership {
  readonly keys: CrawlStateKeys;

  constructor(
    private readonly redis: Redis | Cluster,
    readonly crawlId: string,
    readonly processId: string,
    readonly heartbeatTtlMs = HEARTBEAT_TTL_MS,
  ) {
    this.keys = crawlStateKeys(crawlId, redis.isCluster);
  }

  /** What scripts following the owner rule take: a holder's heartbeat key is this prefix + its id. */
  get heartbeatPrefix(): string {
    return this.keys.processHeartbeat("");
  }

  /** Renew this process's heartbeat; "fenced" when others took it for dead (it must stop at once). */
  async heartbeat(): Promise<"renewed" | "fenced"> {
    const result = await this.redis.eval(
      HEARTBEAT_LUA, 2, this.keys.processHeartbeat(this.processId), this.keys.fenced, this.processId, this.heartbeatTtlMs, Date.now(),
    );
    return result === 1 ? "renewed" : "fenced";
  }

  async clearHeartbeat(): Promise<void> {
    await this.redis.del(this.keys.processHeartbeat(this.processId));
  }

  /** Whether an owner is alive: this process, or one whose heartbeat is there. */
  async isAlive(owner: string): Promise<boolean> {
    if (owner === this.processId) return true;
    return (await this.redis.exists(this.keys.processHeartbeat(owner))) === 1;
  }

  /**
   * Take a process for dead if its heartbeat is gone: from then on it can never renew it, so whatever
   * of its work is taken over (leases, claims, writer slot, open WARC) it will not touch again.
   */
  async fenceIfDead(owner: string): Promise<boolean> {
    if (owner === this.processId) return false;
    return (await this.redis.eval(FENCE_LUA, 2, this.keys.processHeartbeat(owner), this.keys.fenced, owner)) === 1;
  }

  /**
   * Processes of this pid namespace that are gone (killed, crashed) need not wait for their heartbeat
   * to expire: drop it now and fence them, so their leases, writer slots and sitemap reading are taken
   * over at once. Processes this one cannot see (other machines, other containers) are left to their
   * heartbeat (processIdentity.ts). The holders are those of the frontier's leases, of the writer slots and of
 * the sitemap reading.
   */
  async reapLocalDeadProcesses(frontier: LeaseHolders): Promise<string[]> {
    const holders = await Promise.all([frontier.leaseHolders(), this.redis.hvals(this.keys.writers), this.redis.get(this.keys.sitemapRead)]);
    const reaped: string[] = [];
    for (const owner of new Set(holders.flat())) {
      if (owner === null || owner === this.processId || !isLocalProcessGone(owner)) continue;
      await this.redis.del(this.keys.processHeartbeat(owner));
      if (await this.fenceIfDead(owner)) reaped.push(owner);
    }
    return reaped;
  }
}
