import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { dedupeKeys } from "../src/dedupe/keys.js";
import { ownerScript } from "../src/state/membership/ownerRule.js";
import type { ImportResource } from "./sources.js";

// The lease holds the token of one take: renew, release and fail act only while it is still ours, so
// an importer whose lease expired (its entry requeued and taken by another) cannot touch the entry.
const TAKE_LUA = `
local json = redis.call('LPOP', KEYS[1])
if not json then return false end
local name = cjson.decode(json).name
redis.call('HSET', KEYS[2], name, json)
redis.call('SET', ARGV[2] .. name, ARGV[1], 'PX', tonumber(ARGV[3]))
return json
`;

const RENEW_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
`;

// KEYS: lease, pending, queued; ARGV: token, name, forget ('1': the entry failed, let a later run retry it)
const FINISH_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], ARGV[2])
if ARGV[3] == '1' then redis.call('SREM', KEYS[3], ARGV[2]) end
return 1
`;

// Requeue an entry whose importer's lease expired (see ownerRule.ts: the lease is the entry's liveness
// key; no fence set is needed, the token of each take is the fence).
const REQUEUE_LUA = ownerScript(`
-- KEYS: lease, pending, queue; ARGV: name
if is_alive(KEYS[1]) then return 0 end
local json = redis.call('HGET', KEYS[2], ARGV[1])
if not json then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('LPUSH', KEYS[3], json)
return 1
`);

/** One taken entry: the resource and the token its lease holds. */
export interface Lease {
  resource: ImportResource;
  token: string;
}

/**
 * Import tracking shared by cooperating importers: src:q (queued), src:qset (names ever queued),
 * src:d (imported), pending:q with a lease per entry, so a crashed importer's entry is retried and a
 * live one's is not.
 */
export class ImportQueue {
  constructor(
    private readonly redis: Redis,
    private readonly importerId: string,
    private readonly leaseMs = 10_000,
  ) {}

  /** Queue resources not queued before (by name); returns how many were new. */
  async enqueue(resources: ImportResource[]): Promise<number> {
    let queued = 0;
    for (const resource of resources) {
      if ((await this.redis.sadd(dedupeKeys.importQueued, resource.name)) === 1) {
        await this.redis.rpush(dedupeKeys.importQueue, JSON.stringify(resource));
        queued += 1;
      }
    }
    return queued;
  }

  async take(): Promise<Lease | null> {
    const token = `${this.importerId}:${randomUUID()}`;
    const json = (await this.redis.eval(
      TAKE_LUA, 2, dedupeKeys.importQueue, dedupeKeys.importPending, token, dedupeKeys.importLease(""), this.leaseMs,
    )) as string | null;
    return json ? { resource: JSON.parse(json) as ImportResource, token } : null;
  }

  /** Extend the lease; false when it is no longer ours (it expired, and the entry went to another importer). */
  async renew(lease: Lease): Promise<boolean> {
    return (await this.redis.eval(RENEW_LUA, 1, dedupeKeys.importLease(lease.resource.name), lease.token, this.leaseMs)) === 1;
  }

  /** The entry is finished (src:d was set by the import's final step); false if the lease was lost. */
  async release(lease: Lease): Promise<boolean> {
    return this.finish(lease, false);
  }

  /** The entry failed: forget it was queued, so running the importer again retries it; false if the lease was lost. */
  async fail(lease: Lease): Promise<boolean> {
    return this.finish(lease, true);
  }

  private async finish(lease: Lease, forget: boolean): Promise<boolean> {
    const name = lease.resource.name;
    return (await this.redis.eval(
      FINISH_LUA, 3, dedupeKeys.importLease(name), dedupeKeys.importPending, dedupeKeys.importQueued, lease.token, name, forget ? "1" : "0",
    )) === 1;
  }

  /** Requeue entries whose importer's lease expired (it died mid-import). */
  async recoverExpired(): Promise<string[]> {
    const recovered: string[] = [];
    for (const name of await this.redis.hkeys(dedupeKeys.importPending)) {
      // Atomic: only one importer requeues it, and only while its lease is gone.
      const requeued = await this.redis.eval(REQUEUE_LUA, 3, dedupeKeys.importLease(name), dedupeKeys.importPending, dedupeKeys.importQueue, name);
      if (requeued === 1) recovered.push(name);
    }
    return recovered;
  }

  async isDrained(): Promise<boolean> {
    const [queued, pending] = await Promise.all([this.redis.llen(dedupeKeys.importQueue), this.redis.hlen(dedupeKeys.importPending)]);
    return queued === 0 && pending === 0;
  }


  /** Write updateProgress (fraction imported of everything queued); returns it. */
  async updateProgress(): Promise<number> {
    const [done, queued] = await Promise.all([this.redis.scard(dedupeKeys.importDone), this.redis.scard(dedupeKeys.importQueued)]);
    const fraction = queued ? Math.min(1, done / queued) : 1;
    await this.redis.set(dedupeKeys.updateProgress, String(fraction));
    return fraction;
  }

  async markRunFinished(): Promise<void> {
    await this.redis.set(dedupeKeys.lastUpdate, new Date().toISOString());
  }
}
