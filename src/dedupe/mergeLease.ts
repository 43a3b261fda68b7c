// What a purge's rebuild of allhashes and a crawl's commit (or an import's final step) both respect, so a
// crawl committing meanwhile never ends up in allcrawls without its hashes in allhashes:
// - the rebuild holds mergelease (a fenced lease, ownership/fencedLease.ts: it expires unless renewed, so a
//   killed purger holds nothing for long, and its purge is finished by the next indexer run, see purge.ts);
//   mergeepoch is the lease's epoch: raised when a rebuild starts and once it has replaced allhashes;
// - the step that puts a crawl in allcrawls runs only while no lease is held and the epoch is the one read
//   before the crawl's hashes were merged (COMMIT_GUARD_LUA); otherwise the caller waits for the rebuild to
//   end, merges again (idempotent) and tries again;
// - every write of the rebuild (the keys it builds aside, the swap, recount, renumbering) is fenced by the
//   epoch it holds: a rebuild whose lease was taken over (it stalled, or was taken for dead) is refused and
//   stops, so two rebuilds never both swap their keys in, nor write into each other's keys aside. In the
//   sharded layout each slot group of hash shards has a fence of its own (shardKeys.mergeFence), raised to
//   the new holder's epoch before it touches a rebuild key.
// A rebuild whose lease only lapsed (no other took it) goes on: it merges, once it has replaced allhashes,
// every crawl committed since it began.
import { FencedLease, LeaseLostError, isFenced, RAISE_FENCE_LUA, type Fence } from "../ownership/fencedLease.js";
import { shardKeys } from "./indexKeys.js";
import { keysOf, layoutOf, type DedupeRedis } from "./indexLayout.js";
import { forEachSlotGroup, luaScript, runScript } from "./shardSlots.js";

const POLL_MS = 100;

/** Lua: return -1 (try again) while a rebuild holds the lease or one ran since ARGV[epochArg] was read. */
export const COMMIT_GUARD_LUA = (leaseKey: string, epochKey: string, epochArg: string) => `
if redis.call('EXISTS', ${leaseKey}) == 1 or (redis.call('GET', ${epochKey}) or '0') ~= ${epochArg} then return -1 end`;

const RAISE_FENCE = luaScript(RAISE_FENCE_LUA);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

/** The fence of a slot group of hash shards: a key in the slot of its first shard. */
export const slotGroupFenceKey = (shards: string[]) => shardKeys.mergeFence(shards[0]!);

/** The rebuild's hold on allhashes: taken (waiting for another rebuild to end), fenced, released. */
export class MergeLease {
  private constructor(private readonly lease: FencedLease) {}

  /** Take the lease; in the sharded layout, raise every slot group's fence before any rebuild key is touched. */
  static async acquire(redis: DedupeRedis): Promise<MergeLease> {
    const keys = keysOf(redis);
    const lease = await FencedLease.acquire(redis, { lease: keys.mergeLease, epoch: keys.mergeEpoch });
    const layout = layoutOf(redis);
    try {
      if (layout.kind === "sharded") {
        await forEachSlotGroup(layout, (shards) => runScript(redis, RAISE_FENCE, 1, slotGroupFenceKey(shards), lease.takenAt));
      }
    } catch (err) {
      await lease.release().catch(() => undefined);
      throw err;
    }
    return new MergeLease(lease);
  }

  /** The fence of the index's main slot (allcrawls, allcounts, crawlorder, allurls; allhashes on one node). */
  get fence(): Fence {
    return this.lease.fence;
  }

  /** The fence of one slot group of hash shards. */
  shardFence(shards: string[]): Fence {
    return this.lease.fenceAt(slotGroupFenceKey(shards));
  }

  async raiseEpoch(): Promise<void> {
    await this.lease.raiseEpoch();
  }

  async release(): Promise<void> {
    await this.lease.release();
  }
}

/** Where a merge goes: the live merged index, or the one a rebuild builds aside under its (fenced) lease. */
export type MergeTarget = "live" | MergeLease;

/** A fenced script's refusal as a LeaseLostError naming what stopped; any other error as it is. */
export function leaseLostOr(err: unknown, what: string): unknown {
  return isFenced(err) ? new LeaseLostError(what, err) : err;
}
