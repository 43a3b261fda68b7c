import { existsSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import type { Cluster, Redis } from "ioredis";
import type { Membership } from "./membership.js";
import { ownerScript } from "../../ownership/ownerRule.js";

// Take this process's slot back, else the lowest slot of a dead process that wrote into this same
// folder on this same machine (a restart of that writer: its files are here), else a new slot. A dead
// writer of another folder keeps its slot: its files can only be packaged where they are.
const CLAIM_SLOT_LUA = ownerScript(`
-- KEYS: writers, writersPackaged, writerHomes, fenced; ARGV: owner, heartbeatPrefix, home
local slots = redis.call('HGETALL', KEYS[1])
local taken = {}
local free = nil
for i = 1, #slots, 2 do
  local slot = tonumber(slots[i])
  taken[slot] = true
  if slots[i + 1] == ARGV[1] then return slot end
  if not is_alive(ARGV[2] .. slots[i + 1]) and redis.call('HGET', KEYS[3], slots[i]) == ARGV[3] and (free == nil or slot < free) then free = slot end
end
if free == nil then
  free = 0
  while taken[free] do free = free + 1 end
else
  local previous = redis.call('HGET', KEYS[1], free)
  take_over(ARGV[2] .. previous, KEYS[4], previous)
end
redis.call('HSET', KEYS[1], free, ARGV[1])
redis.call('HSET', KEYS[3], free, ARGV[3])
redis.call('SREM', KEYS[2], free)
return free
`);

// Unpackaged slots whose process is gone, with their owner and home: candidates for adoption.
const ORPHANS_LUA = ownerScript(`
-- KEYS: writers, writersPackaged, writerHomes; ARGV: owner, heartbeatPrefix
local slots = redis.call('HGETALL', KEYS[1])
local orphans = {}
for i = 1, #slots, 2 do
  if redis.call('SISMEMBER', KEYS[2], slots[i]) == 0 and slots[i + 1] ~= ARGV[1] and not is_alive(ARGV[2] .. slots[i + 1]) then
    table.insert(orphans, slots[i])
    table.insert(orphans, slots[i + 1])
    table.insert(orphans, redis.call('HGET', KEYS[3], slots[i]) or '')
  end
end
return orphans
`);

// Take a slot over only if it still belongs to the dead owner we checked, and that owner is still dead.
const ADOPT_LUA = ownerScript(`
-- KEYS: writers, writersPackaged, fenced; ARGV: slot, expectedOwner, newOwner, heartbeatPrefix
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
if not take_over(ARGV[4] .. ARGV[2], KEYS[3], ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`);

// Only the slot's owner says it is packaged (one fenced meanwhile no longer owns it).
const MARK_PACKAGED_LUA = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
return redis.call('SADD', KEYS[2], ARGV[1]) + 1
`;

const ALL_PACKAGED_LUA = `
for _, slot in ipairs(redis.call('HKEYS', KEYS[1])) do
  if redis.call('SISMEMBER', KEYS[2], slot) == 0 then return 0 end
end
return 1
`;

/** A dead writer's slot that this process cannot package: its WARC files are elsewhere. */
export interface UnreachableWriter {
  slot: number;
  home: string;
  missingWarcs: string[];
}

/**
 * Each crawler process on a crawl writes its own WARC and WACZ files under a writer slot (0, 1, 2...),
 * bound to its home: machine and archive folder. A restarted writer takes back the slot of its home; a
 * process packages a dead writer's files only when they are in its own archive folder, and a crawl is
 * committed only once every slot is packaged, so no writer's records are ever silently left out.
 */
export class WriterSlots {
  readonly home: string;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly membership: Membership,
    private readonly archiveDir: string,
  ) {
    this.home = writerHome(archiveDir);
  }

  private get keys() {
    return this.membership.keys;
  }

  private get processId(): string {
    return this.membership.processId;
  }

  async claim(): Promise<number> {
    return (await this.redis.eval(
      CLAIM_SLOT_LUA, 4, this.keys.writers, this.keys.writersPackaged, this.keys.writerHomes, this.keys.fenced, this.processId, this.membership.heartbeatPrefix, this.home,
    )) as number;
  }

  /**
   * Take over one unpackaged slot of a dead process whose WARC files are all in this process's archive
   * folder (to package them); null when there is none. Slots it cannot reach are returned in `unreachable`.
   */
  async adoptOrphan(): Promise<{ slot: number | null; unreachable: UnreachableWriter[] }> {
    const flat = (await this.redis.eval(
      ORPHANS_LUA, 3, this.keys.writers, this.keys.writersPackaged, this.keys.writerHomes, this.processId, this.membership.heartbeatPrefix,
    )) as string[];
    const unreachable: UnreachableWriter[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      const [slot, owner, home] = [Number(flat[i]), flat[i + 1], flat[i + 2]];
      const missingWarcs = (await this.warcFilesOf(slot)).filter((f) => !existsSync(join(this.archiveDir, f)));
      if (home !== this.home && missingWarcs.length) {
        unreachable.push({ slot, home, missingWarcs });
        continue;
      }
      const adopted = (await this.redis.eval(
        ADOPT_LUA, 3, this.keys.writers, this.keys.writersPackaged, this.keys.fenced, slot, owner, this.processId, this.membership.heartbeatPrefix,
      )) as number;
      if (adopted === 1) return { slot, unreachable };
    }
    return { slot: null, unreachable };
  }

  /** The WARC files assigned to a slot's WACZ files. */
  async warcFilesOf(slot: number): Promise<string[]> {
    const names = new Set(await this.redis.lrange(this.keys.waczNames(writerName(slot)), 0, -1));
    const assignment = await this.redis.hgetall(this.keys.warcToWacz);
    return Object.entries(assignment).filter(([, wacz]) => names.has(wacz)).map(([warc]) => warc).sort();
  }

  async markPackaged(slot: number): Promise<void> {
    const result = await this.redis.eval(MARK_PACKAGED_LUA, 2, this.keys.writers, this.keys.writersPackaged, slot, this.processId);
    if (result === 0) throw new Error(`writer slot ${slot} is no longer this process's: it was taken for dead and its files handed on`);
  }

  /** True when every writer of the crawl has packaged its WACZ files. */
  async allPackaged(): Promise<boolean> {
    return (await this.redis.eval(ALL_PACKAGED_LUA, 2, this.keys.writers, this.keys.writersPackaged)) === 1;
  }
}

/**
 * Where a writer's files are: this machine, the absolute archive folder, and that folder's device and
 * inode, so that containers sharing a host name (--network host) with different volumes at the same
 * path are different homes, while one shared volume is one home.
 */
export function writerHome(archiveDir: string): string {
  const path = resolve(archiveDir);
  let folder = "";
  try {
    const { dev, ino } = statSync(path);
    folder = `#${dev}:${ino}`;
  } catch {
    // not made yet: the path alone
  }
  return `${hostname()}:${path}${folder}`;
}

/** Writer slot 0 keeps the plain collection name for its WACZ; others are told apart by a suffix. */
export function writerName(slot: number): string {
  return slot === 0 ? "main" : `w${slot}`;
}
