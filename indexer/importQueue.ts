import type { Redis } from "ioredis";
import { dedupeKeys } from "../src/dedupe/keys.js";
import type { ImportResource } from "./sources.js";

const TAKE_LUA = `
local json = redis.call('LPOP', KEYS[1])
if not json then return false end
local name = cjson.decode(json).name
redis.call('HSET', KEYS[2], name, json)
redis.call('SET', ARGV[2] .. name, ARGV[1], 'PX', tonumber(ARGV[3]))
return json
`;

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

  async take(): Promise<ImportResource | null> {
    const json = (await this.redis.eval(
      TAKE_LUA, 2, dedupeKeys.importQueue, dedupeKeys.importPending, this.importerId, dedupeKeys.importLease(""), this.leaseMs,
    )) as string | null;
    return json ? (JSON.parse(json) as ImportResource) : null;
  }

  async renew(name: string): Promise<void> {
    await this.redis.set(dedupeKeys.importLease(name), this.importerId, "PX", this.leaseMs);
  }

  /** The entry is finished (src:d was set by the import's final step). */
  async release(name: string): Promise<void> {
    await this.redis.multi().hdel(dedupeKeys.importPending, name).del(dedupeKeys.importLease(name)).exec();
  }

  /** The entry failed: forget it was queued, so running the importer again retries it. */
  async fail(name: string): Promise<void> {
    await this.redis
      .multi()
      .hdel(dedupeKeys.importPending, name)
      .del(dedupeKeys.importLease(name))
      .srem(dedupeKeys.importQueued, name)
      .exec();
  }

  /** Requeue entries whose importer's lease expired (it died mid-import). */
  async recoverExpired(): Promise<string[]> {
    const pending = await this.redis.hgetall(dedupeKeys.importPending);
    const recovered: string[] = [];
    for (const [name, json] of Object.entries(pending)) {
      if (await this.redis.exists(dedupeKeys.importLease(name))) continue;
      // Only one importer wins the right to requeue it.
      if ((await this.redis.hdel(dedupeKeys.importPending, name)) === 1) {
        await this.redis.lpush(dedupeKeys.importQueue, json);
        recovered.push(name);
      }
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
