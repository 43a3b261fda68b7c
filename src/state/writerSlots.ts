import type { Redis } from "ioredis";
import type { CrawlStateKeys } from "./keys.js";

// Take this process's slot back, else the lowest slot of a dead process, else a new one.
const CLAIM_SLOT_LUA = `
local slots = redis.call('HGETALL', KEYS[1])
local taken = {}
local free = nil
for i = 1, #slots, 2 do
  local slot = tonumber(slots[i])
  taken[slot] = true
  if slots[i + 1] == ARGV[1] then return slot end
  if redis.call('EXISTS', ARGV[2] .. slots[i + 1]) == 0 and (free == nil or slot < free) then free = slot end
end
if free == nil then
  free = 0
  while taken[free] do free = free + 1 end
end
redis.call('HSET', KEYS[1], free, ARGV[1])
redis.call('SREM', KEYS[2], free)
return free
`;

// An unpackaged slot whose process is gone: take it over (to package its files).
const ADOPT_LUA = `
local slots = redis.call('HGETALL', KEYS[1])
for i = 1, #slots, 2 do
  if redis.call('SISMEMBER', KEYS[2], slots[i]) == 0 and slots[i + 1] ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. slots[i + 1]) == 0 then
    redis.call('HSET', KEYS[1], slots[i], ARGV[1])
    return tonumber(slots[i])
  end
end
return -1
`;

const ALL_PACKAGED_LUA = `
for _, slot in ipairs(redis.call('HKEYS', KEYS[1])) do
  if redis.call('SISMEMBER', KEYS[2], slot) == 0 then return 0 end
end
return 1
`;

/**
 * Each crawler process on a crawl writes its own WARC and WACZ files under a writer slot (0, 1, 2...).
 * A restarted process takes over the slot of a dead one, so its unfinished files are packaged by it.
 */
export class WriterSlots {
  constructor(
    private readonly redis: Redis,
    private readonly keys: CrawlStateKeys,
    private readonly processId: string,
  ) {}

  async claim(): Promise<number> {
    return (await this.redis.eval(
      CLAIM_SLOT_LUA, 2, this.keys.writers, this.keys.writersPackaged, this.processId, this.keys.processHeartbeat(""),
    )) as number;
  }

  /** Take over one unpackaged slot of a dead process; null when there is none. */
  async adoptOrphan(): Promise<number | null> {
    const slot = (await this.redis.eval(
      ADOPT_LUA, 2, this.keys.writers, this.keys.writersPackaged, this.processId, this.keys.processHeartbeat(""),
    )) as number;
    return slot >= 0 ? slot : null;
  }

  async markPackaged(slot: number): Promise<void> {
    await this.redis.sadd(this.keys.writersPackaged, String(slot));
  }

  /** True when every writer of the crawl has packaged its WACZ files. */
  async allPackaged(): Promise<boolean> {
    return (await this.redis.eval(ALL_PACKAGED_LUA, 2, this.keys.writers, this.keys.writersPackaged)) === 1;
  }
}

/** Writer slot 0 keeps the plain collection name for its WACZ; others are told apart by a suffix. */
export function writerName(slot: number): string {
  return slot === 0 ? "main" : `w${slot}`;
}
