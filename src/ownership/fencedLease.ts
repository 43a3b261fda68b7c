/**
 * A lease with a fencing token: one holder at a time holds `lease` (its holder id as value, expiring unless
 * renewed), and every take of it raises `epoch`, a counter in the lease's slot. The holder's epoch is the
 * token: every write that depends on the lease runs as a fenced script (fencedScript), which compares the
 * fence value in its own slot to the caller's epoch and refuses when a newer holder raised it. So a holder
 * that stalled past its lease, or was wrongly taken for dead, cannot act again once another took over,
 * though it cannot know so itself. Keys in other cluster slots carry a fence value of their own, raised by
 * each new holder before it touches them (RAISE_FENCE_LUA), see README.md.
 */
import type { Cluster, Redis } from "ioredis";
import { isHolderGone, newHolderId } from "./processIdentity.js";

type LeaseRedis = Redis | Cluster;

export const DEFAULT_LEASE_MS = 10_000;
const RENEW_MS = 3_000;
const POLL_MS = 100;

/** Where a fenced script finds its fence value, and the epoch the caller acts under. */
export interface Fence {
  key: string;
  epoch: number;
}

/** Thrown where a fenced write was refused: a newer holder took the lease over. */
export class LeaseLostError extends Error {
  constructor(what: string, cause: unknown) {
    super(`${what}: its lease was taken over by a newer holder, which does the work instead; this one stopped, its fenced writes refused (${cause instanceof Error ? cause.message : String(cause)})`);
    this.name = "LeaseLostError";
  }
}

const FENCED_REPLY = "FENCED";

/** Whether an error is a fenced script's refusal. */
export function isFenced(err: unknown): boolean {
  return err instanceof Error && err.message.includes(FENCED_REPLY);
}

/**
 * A Lua body run only while no newer holder took over: the script's first key is the fence value and its
 * first argument the caller's epoch, both taken off KEYS and ARGV before `body` runs (which sees the rest
 * as KEYS[1..] and ARGV[1..]). Refused with an error reply naming both epochs.
 */
export function fencedScript(body: string): string {
  return `
local fence_key = table.remove(KEYS, 1)
local caller_epoch = tonumber(table.remove(ARGV, 1))
local fence = tonumber(redis.call('GET', fence_key) or '0')
if fence > caller_epoch then return redis.error_reply('${FENCED_REPLY} epoch ' .. caller_epoch .. ' < ' .. fence) end
${body}`;
}

type ScriptArg = string | Buffer | number;

/** A fenced script's numkeys, KEYS and ARGV: the fence's key before `keys`, its epoch before `args`. */
export function fencedArgs(fence: Fence, keys: (string | Buffer)[], args: ScriptArg[] = []): [number, ...ScriptArg[]] {
  return [1 + keys.length, fence.key, ...keys, fence.epoch, ...args];
}

// KEYS: fence; ARGV: epoch. A fence value never goes down: an older holder raising late changes nothing.
export const RAISE_FENCE_LUA = `
local fence = tonumber(redis.call('GET', KEYS[1]) or '0')
if fence < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`;

// KEYS: lease, epoch; ARGV: holder, ms. Take the lease and raise the epoch in one step.
const TAKE_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end
return 0
`;
// KEYS: lease; ARGV: holder. Delete or renew only our own lease.
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const RENEW_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface LeaseKeys {
  /** Holds the holder's id while held. */
  lease: string;
  /** The epoch counter (same slot): raised by every take, and by the holder's own raiseEpoch. */
  epoch: string;
}

export class FencedLease {
  private renewal: NodeJS.Timeout | undefined;
  private current: number;

  private constructor(
    private readonly redis: LeaseRedis,
    private readonly keys: LeaseKeys,
    readonly holder: string,
    /** The epoch this holder took the lease at: what fences in other slots are raised to. */
    readonly takenAt: number,
  ) {
    this.current = takenAt;
  }

  /**
   * Wait for the lease and take it. A holder this process can see is gone (same pid namespace, its pid
   * free or reused) is taken over at once; any other waits until its lease expires.
   */
  static async acquire(redis: LeaseRedis, keys: LeaseKeys, leaseMs = DEFAULT_LEASE_MS): Promise<FencedLease> {
    const holder = newHolderId();
    for (;;) {
      const epoch = Number(await redis.eval(TAKE_LUA, 2, keys.lease, keys.epoch, holder, leaseMs));
      if (epoch > 0) {
        const lease = new FencedLease(redis, keys, holder, epoch);
        // A renewal that finds the lease gone changes nothing: the fenced writes refuse what must not happen.
        lease.renewal = setInterval(() => void redis.eval(RENEW_LUA, 1, keys.lease, holder, leaseMs).catch(() => undefined), Math.min(RENEW_MS, leaseMs / 3));
        return lease;
      }
      const held = await redis.get(keys.lease);
      if (held && isHolderGone(held)) await redis.eval(RELEASE_LUA, 1, keys.lease, held);
      else await sleep(POLL_MS);
    }
  }

  /** The fence of the lease's own slot: the epoch counter, at the value this holder last set. */
  get fence(): Fence {
    return { key: this.keys.epoch, epoch: this.current };
  }

  /** A fence in another slot, raised to `takenAt` (RAISE_FENCE_LUA) when the lease was taken. */
  fenceAt(key: string): Fence {
    return { key, epoch: this.takenAt };
  }

  /** Raise the epoch (readers compare it to tell that something changed), only while still the holder. */
  async raiseEpoch(): Promise<void> {
    this.current = Number(await this.redis.eval(fencedScript(`return redis.call('INCR', KEYS[1])`), ...fencedArgs(this.fence, [this.keys.epoch])));
  }

  async release(): Promise<void> {
    clearInterval(this.renewal);
    await this.redis.eval(RELEASE_LUA, 1, this.keys.lease, this.holder);
  }
}
