import { randomUUID } from "node:crypto";
import { isHolderGone, keysOf, type DedupeRedis, ownerScript } from "../src/dedupe/index.js";
import type { ImportResource } from "./sources.js";

// Queue the resources (JSON, ARGV) not imported (src:d), not queued (src:q) and not being imported
// (pending:q): one atomic step, so a kill leaves either nothing or a queued entry, never a name in
// src:qset that no queue holds. src:qset keeps every name ever queued, for updateProgress.
// KEYS: queue, queued, done, pending
const ENQUEUE_LUA = `
local inQueue = {}
for _, json in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do inQueue[cjson.decode(json).name] = true end
local queued = 0
for i = 1, #ARGV do
  local name = cjson.decode(ARGV[i]).name
  if not inQueue[name] and redis.call('SISMEMBER', KEYS[3], name) == 0 and redis.call('HEXISTS', KEYS[4], name) == 0 then
    redis.call('SADD', KEYS[2], name)
    redis.call('RPUSH', KEYS[1], ARGV[i])
    inQueue[name] = true
    queued = queued + 1
  end
end
return queued
`;
/** Resources per enqueue script: each reads the queue once, so a big manifest is a few calls, not one per entry. */
const ENQUEUE_SLICE = 1000;

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

// Requeue an entry whose lease still holds the token of an importer proven dead (its process is gone).
// KEYS: lease, pending, queue; ARGV: name, token
const REQUEUE_DEAD_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
local json = redis.call('HGET', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
if not json then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('LPUSH', KEYS[3], json)
return 1
`;

/** One taken entry: the resource and the token its lease holds. */
export interface Lease {
  resource: ImportResource;
  token: string;
}

/**
 * Import tracking shared by cooperating importers: src:q (queued), src:qset (names ever queued),
 * src:d (imported), pending:q with a lease per entry, so a crashed importer's entry is retried and a
 * live one's is not. Every step that moves an entry (enqueue, take, finish, requeue) is one script:
 * an importer killed at any moment leaves each entry queued, pending under a lease, or imported.
 */
export class ImportQueue {
  constructor(
    private readonly redis: DedupeRedis,
    private readonly importerId: string,
    private readonly leaseMs = 10_000,
  ) {}

  private get keys() {
    return keysOf(this.redis);
  }

  /**
   * Queue every resource not imported yet (not in src:d) that is neither queued nor being imported now;
   * returns how many were queued. What decides is src:d, not src:qset: an entry a killed run left in
   * src:qset but in no queue is queued again. One script per slice, so no kill falls between its steps.
   */
  async enqueue(resources: ImportResource[]): Promise<number> {
    let queued = 0;
    for (let i = 0; i < resources.length; i += ENQUEUE_SLICE) {
      const slice = resources.slice(i, i + ENQUEUE_SLICE).map((r) => JSON.stringify(r));
      queued += (await this.redis.eval(
        ENQUEUE_LUA, 4, this.keys.importQueue, this.keys.importQueued, this.keys.importDone, this.keys.importPending, ...slice,
      )) as number;
    }
    return queued;
  }

  async take(): Promise<Lease | null> {
    const token = `${this.importerId}:${randomUUID()}`;
    const json = (await this.redis.eval(
      TAKE_LUA, 2, this.keys.importQueue, this.keys.importPending, token, this.keys.importLease(""), this.leaseMs,
    )) as string | null;
    return json ? { resource: JSON.parse(json) as ImportResource, token } : null;
  }

  /** Extend the lease; false when it is no longer ours (it expired, and the entry went to another importer). */
  async renew(lease: Lease): Promise<boolean> {
    return (await this.redis.eval(RENEW_LUA, 1, this.keys.importLease(lease.resource.name), lease.token, this.leaseMs)) === 1;
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
      FINISH_LUA, 3, this.keys.importLease(name), this.keys.importPending, this.keys.importQueued, lease.token, name, forget ? "1" : "0",
    )) === 1;
  }

  /** Requeue entries whose importer's lease expired, or whose importer is proven dead (it died mid-import). */
  async recoverExpired(): Promise<string[]> {
    const recovered: string[] = [];
    for (const name of await this.redis.hkeys(this.keys.importPending)) {
      // Atomic: only one importer requeues it, and only while its lease is gone (or still the dead one's).
      const lease = this.keys.importLease(name);
      let requeued = await this.redis.eval(REQUEUE_LUA, 3, lease, this.keys.importPending, this.keys.importQueue, name);
      const token = requeued === 1 ? null : await this.redis.get(lease);
      // Its importer's process is gone (same pid namespace, src/ownership/processIdentity.ts): no need to wait for the lease to expire (a live one
      // mistaken for dead only imports the entry twice, idempotently; its token no longer releases it).
      if (token && isHolderGone(token)) requeued = await this.redis.eval(REQUEUE_DEAD_LUA, 3, lease, this.keys.importPending, this.keys.importQueue, name, token);
      if (requeued === 1) recovered.push(name);
    }
    return recovered;
  }

  async isDrained(): Promise<boolean> {
    const [queued, pending] = await Promise.all([this.redis.llen(this.keys.importQueue), this.redis.hlen(this.keys.importPending)]);
    return queued === 0 && pending === 0;
  }


  /** Write updateProgress (fraction imported of everything queued); returns it. */
  async updateProgress(): Promise<number> {
    const [done, queued] = await Promise.all([this.redis.scard(this.keys.importDone), this.redis.scard(this.keys.importQueued)]);
    const fraction = queued ? Math.min(1, done / queued) : 1;
    await this.redis.set(this.keys.updateProgress, String(fraction));
    return fraction;
  }

  async markRunFinished(): Promise<void> {
    await this.redis.set(this.keys.lastUpdate, new Date().toISOString());
  }
}
