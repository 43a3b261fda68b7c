// Which crawl allhashes names for a payload that several crawls hold, decided the same way whatever order
// their WACZ files are imported in, however often an importer is killed, and however many share the work:
// the crawl first in crawlorder (the order of the crawls in the manifests imported, see rankCrawls), a crawl
// without a rank (committed by a crawler) before every ranked one, equal ranks by crawl id. An import
// writes allhashes only where no crawl holds a payload yet and hands the others back (heldDigests); those
// whose holder comes after the importing crawl are taken over here, each only while the holder read is
// still there (a compare-and-set), so two importers racing for one digest end with the first in order.
// A purge's rebuild merges crawls in the same order (first writer wins): the same answer.
import type { Buffer } from "node:buffer";
import { keysOf, type DedupeRedis } from "./indexLayout.js";
import { luaScript, runScript } from "./shardSlots.js";
import { fencedArgs, fencedScript, type Fence } from "../ownership/fencedLease.js";

// The crawls ranked before that the manifest does not list, in their order, then the manifest's crawls in
// its order: one script (a kill leaves the old order or the new). The same manifest again changes nothing;
// single WACZ files imported one run after another rank in the order they were imported.
const RANK_LUA = `
local flat = redis.call('HGETALL', KEYS[1])
local others = {}
local listed = {}
for i = 1, #ARGV do listed[ARGV[i]] = true end
for i = 1, #flat, 2 do if not listed[flat[i]] then others[#others + 1] = {flat[i], tonumber(flat[i + 1])} end end
table.sort(others, function(a, b) if a[2] ~= b[2] then return a[2] < b[2] end return a[1] < b[1] end)
for i, entry in ipairs(others) do redis.call('HSET', KEYS[1], entry[1], i) end
for i = 1, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], #others + i) end
return #ARGV + #others
`;

// 1..n again in the same order, after a purge took crawls out (dense: the next crawl met gets n + 1).
// Fenced by the purge's merge lease (its fence key and epoch go first).
const RENUMBER_LUA = fencedScript(`
local flat = redis.call('HGETALL', KEYS[1])
local ranked = {}
for i = 1, #flat, 2 do ranked[#ranked + 1] = {flat[i], tonumber(flat[i + 1])} end
table.sort(ranked, function(a, b) if a[2] ~= b[2] then return a[2] < b[2] end return a[1] < b[1] end)
for i, entry in ipairs(ranked) do redis.call('HSET', KEYS[1], entry[1], i) end
return #ranked
`);

// KEYS[1]: one allhashes (shard); ARGV: crawl, then field/holder pairs. Take a field while the holder read
// is still its holder (or none is); return the ARGV position and new holder of those that moved meanwhile.
const CLAIM_LUA = luaScript(`
local moved = {}
for i = 2, #ARGV, 2 do
  local holder = redis.call('HGET', KEYS[1], ARGV[i])
  if not holder or holder == ARGV[i + 1] then redis.call('HSET', KEYS[1], ARGV[i], ARGV[1])
  elseif holder ~= ARGV[1] then moved[#moved + 1] = i; moved[#moved + 1] = holder end
end
return moved
`);

/** A payload an import found held by another crawl: its allhashes key (shard), field, and the holder. */
export interface HeldDigest {
  key: string;
  field: string | Buffer;
  holder: string;
}

/**
 * crawlorder after a manifest: the crawls ranked before that it does not list, then its crawls in its order
 * (a crawl purged and listed again takes its place again). A manifest that reorders crawls already imported
 * moves no payload they hold (a purge's rebuild would): keep a collection's manifest in one order.
 */
export async function rankCrawls(redis: DedupeRedis, crawlIds: string[]): Promise<void> {
  await redis.eval(RANK_LUA, 1, keysOf(redis).crawlOrder, ...new Set(crawlIds));
}

export async function renumberCrawls(redis: DedupeRedis, fence: Fence): Promise<void> {
  await redis.eval(RENUMBER_LUA, ...fencedArgs(fence, [keysOf(redis).crawlOrder]));
}

/** crawlorder as this process knows it: read again when a crawl it has not seen turns up. */
export class CrawlRanks {
  private ranks = new Map<string, number>();
  private unranked = new Set<string>();

  constructor(private readonly redis: DedupeRedis) {}

  async learn(crawlIds: Iterable<string>): Promise<void> {
    const unknown = [...crawlIds].filter((id) => !this.ranks.has(id) && !this.unranked.has(id));
    if (!unknown.length) return;
    const stored = await this.redis.hgetall(keysOf(this.redis).crawlOrder);
    this.ranks = new Map(Object.entries(stored).map(([id, rank]) => [id, Number(rank)]));
    for (const id of unknown) if (!this.ranks.has(id)) this.unranked.add(id);
  }

  /** Whether crawl `a` comes before crawl `b` (learn both first). */
  precedes(a: string, b: string): boolean {
    const [rankA, rankB] = [this.ranks.get(a) ?? 0, this.ranks.get(b) ?? 0];
    return rankA !== rankB ? rankA < rankB : a < b;
  }

  /** Crawls sorted in this order (the order a rebuild merges them in). */
  async sorted(crawlIds: string[]): Promise<string[]> {
    await this.learn(crawlIds);
    return [...crawlIds].sort((a, b) => (a === b ? 0 : this.precedes(a, b) ? -1 : 1));
  }

  /** Take over, for `crawlId`, the held digests whose holder it precedes, until none is left. */
  async claim(crawlId: string, held: HeldDigest[]): Promise<void> {
    let pending = held;
    while (pending.length) {
      await this.learn([crawlId, ...pending.map((h) => h.holder)]);
      const byKey = new Map<string, HeldDigest[]>();
      for (const item of pending) if (this.precedes(crawlId, item.holder)) byKey.get(item.key)?.push(item) ?? byKey.set(item.key, [item]);
      const next: HeldDigest[] = [];
      await Promise.all([...byKey].map(async ([key, items]) => {
        const moved = (await runScript(this.redis, CLAIM_LUA, 1, key, crawlId, ...items.flatMap((h) => [h.field, h.holder]))) as (number | string)[];
        for (let i = 0; i < moved.length; i += 2) next.push({ ...items[(Number(moved[i]) - 2) / 2]!, holder: String(moved[i + 1]) });
      }));
      pending = next;
    }
  }
}
