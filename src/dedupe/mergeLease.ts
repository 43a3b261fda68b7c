// What a purge's rebuild of allhashes and a crawl's commit (or an import's final step) both respect, so a
// crawl committing meanwhile never ends up in allcrawls without its hashes in allhashes (issue 28, item 8):
// - the rebuild holds mergelease (a token that expires unless renewed: a killed purger holds nothing for
//   long, and its purge is finished by the next indexer run, see purge.ts) and raises mergeepoch when it
//   starts and once it has replaced allhashes;
// - the step that puts a crawl in allcrawls runs only while no lease is held and the epoch is the one read
//   before the crawl's hashes were merged (COMMIT_GUARD_LUA); otherwise the caller waits for the rebuild to
//   end, merges again (idempotent) and tries again.
// A rebuild whose lease lapsed (its process stalled) cannot be fenced out of every shard in the sharded
// layout, so it also merges, once it has replaced allhashes, every crawl committed since it began.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { keysOf, type DedupeRedis } from "./layout.js";

const LEASE_MS = 10_000;
const RENEW_MS = 3_000;
const POLL_MS = 100;

/** Lua: return -1 (try again) while a rebuild holds the lease or one ran since ARGV[epochArg] was read. */
export const COMMIT_GUARD_LUA = (leaseKey: string, epochKey: string, epochArg: string) => `
if redis.call('EXISTS', ${leaseKey}) == 1 or (redis.call('GET', ${epochKey}) or '0') ~= ${epochArg} then return -1 end`;

// KEYS: lease; ARGV: token. Delete or renew only our own lease.
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const RENEW_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A lease holder's id: "<host>-<pid>-<run>" (import leases add ":<take>"). */
export function holderId(): string {
  return `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
}

/**
 * Whether the holder of a lease token is provably dead: it ran on this host and its process is gone.
 * (Mistaking a live holder for dead must be harmless where this is used: its token no longer fits.)
 * Anything else waits for the lease to expire.
 */
export function holderIsDead(token: string): boolean {
  const holder = /^(.*)-(\d+)-[0-9a-f]{8}(:|$)/.exec(token);
  if (!holder || holder[1] !== hostname() || Number(holder[2]) === process.pid) return false;
  try {
    process.kill(Number(holder[2]), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/** Wait until no rebuild holds the lease; returns the epoch to check at commit. */
export async function epochWhenNoRebuild(redis: DedupeRedis, onWait?: () => void): Promise<string> {
  const keys = keysOf(redis);
  let warned = false;
  for (;;) {
    const [lease, epoch] = await Promise.all([redis.exists(keys.mergeLease), redis.get(keys.mergeEpoch)]);
    if (!lease) return epoch ?? "0";
    if (!warned) onWait?.();
    warned = true;
    await sleep(POLL_MS);
  }
}

/** The rebuild's hold on allhashes: taken (waiting for another rebuild to end), renewed, released. */
export class MergeLease {
  private renewal: NodeJS.Timeout | undefined;

  private constructor(
    private readonly redis: DedupeRedis,
    readonly token: string,
  ) {}

  static async acquire(redis: DedupeRedis): Promise<MergeLease> {
    const keys = keysOf(redis);
    const token = holderId();
    while ((await redis.set(keys.mergeLease, token, "PX", LEASE_MS, "NX")) !== "OK") {
      // A killed purger's lease is taken back at once when provably dead (its rebuild is redone from the start).
      const held = await redis.get(keys.mergeLease);
      if (held && holderIsDead(held)) await redis.eval(RELEASE_LUA, 1, keys.mergeLease, held);
      else await sleep(POLL_MS);
    }
    const lease = new MergeLease(redis, token);
    // A renewal that finds the lease gone changes nothing: the rebuild's catch-up merge covers that case.
    lease.renewal = setInterval(() => void redis.eval(RENEW_LUA, 1, keys.mergeLease, token, LEASE_MS).catch(() => undefined), RENEW_MS);
    await redis.incr(keys.mergeEpoch);
    return lease;
  }

  async raiseEpoch(): Promise<void> {
    await this.redis.incr(keysOf(this.redis).mergeEpoch);
  }

  async release(): Promise<void> {
    clearInterval(this.renewal);
    await this.redis.eval(RELEASE_LUA, 1, keysOf(this.redis).mergeLease, this.token);
  }
}
