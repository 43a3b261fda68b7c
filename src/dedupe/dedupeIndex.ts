import { mergeCrawlHashes } from "./commit.js";
import {
  COUNT_FIELDS,
  formatHashEntry,
  LUA_KEY,
  parseHashEntry,
  parseWaczEntry,
  type CountField,
  type HashEntry,
  type WaczEntry,
} from "./indexKeys.js";
import { keysOf, layoutOf, scriptByLayout, type DedupeRedis } from "./indexLayout.js";
import { addOriginalSharded, lookupSharded } from "./shardedHashes.js";

/**
 * A confirmed original capture of a payload, found in the dedupe index: always a response record (only
 * responses are indexed, by the crawler's response notes and the indexer's response lines), so a revisit
 * naming it resolves in one step.
 */
export interface OriginalCapture extends HashEntry {
  crawlId: string;
  /** The WACZ holding it, when its c:<crawlId>:wacz entry exists. */
  waczFilename: string | null;
  /** Whether that WACZ is packaged (its entry has hash and size), so a relation.requires can name it. */
  waczFinished: boolean;
}

// One round trip: this crawl's own hashes first, then the merged index of committed crawls, never a crawl
// being purged (single-node layout; the sharded one looks the WACZ entry up in a second call, see lookup).
const LOOKUP_LUA = `
local value = redis.call('HGET', KEYS[1], ARGV[1])
local crawl = ARGV[2]
if not value then
  crawl = redis.call('HGET', KEYS[2], ARGV[1])
  if not crawl or redis.call('SISMEMBER', KEYS[3], crawl) == 1 then return false end
  value = redis.call('HGET', ${LUA_KEY.crawlHashes("crawl")}, ARGV[1])
  if not value then return false end
end
local index = tonumber(string.match(value, '^(%d+) '))
local wacz = false
if index then wacz = redis.call('LINDEX', ${LUA_KEY.crawlWaczList("crawl")}, index) end
return {crawl, value, wacz}
`;

// Sharded layout, the second call of a lookup of another crawl's original ({dd} slot): false if that crawl
// is being purged, else its WACZ entry (the cached one when ARGV[2] is '1').
const OTHER_CRAWL_WACZ_LUA = scriptByLayout((lua) => `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return false end
if ARGV[3] == '1' then return '' end
return {redis.call('LINDEX', ${lua.crawlWaczList("ARGV[1]")}, tonumber(ARGV[2])) or ''}
`);

// Push a WACZ placeholder unless this filename is listed already (a restarted crawl reuses its entry).
const REGISTER_WACZ_LUA = `
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
for i, json in ipairs(entries) do
  local ok, entry = pcall(cjson.decode, json)
  if ok and entry.filename == ARGV[1] then return i - 1 end
end
return redis.call('RPUSH', KEYS[1], cjson.encode({filename = ARGV[1]})) - 1
`;

// Complete a WACZ entry and add its size to totalCrawlSize, once: a repeated call changes nothing.
const FINISH_WACZ_LUA = `
local json = redis.call('LINDEX', KEYS[1], tonumber(ARGV[1]))
if not json then return -1 end
local entry = cjson.decode(json)
local previous = tonumber(entry.size) or 0
if entry.hash == ARGV[3] and previous == tonumber(ARGV[4]) then return 0 end
redis.call('LSET', KEYS[1], tonumber(ARGV[1]), ARGV[2])
redis.call('HINCRBY', KEYS[2], 'totalCrawlSize', tonumber(ARGV[4]) - previous)
return 1
`;

// All or nothing; once per note id when one is given (a note retried after a crash must not count twice).
const ADD_COUNTS_LUA = `
if ARGV[1] ~= '' and redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
for i = 2, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], tonumber(ARGV[i + 1])) end
return 1
`;

// A concurrent crawl's new original goes into allhashes at once (first writer wins there too).
const ADD_ORIGINAL_LIVE_LUA = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[3])
return 1
`;

/** The dedupe index as one crawl uses it: lookups, its own hashes and counts, its WACZ list. */
export class DedupeIndex {
  /**
   * @param concurrent --dedupeConcurrent: hashes join allhashes as they are written, so other crawls
   *   dedupe against this one before it is committed (its counts still join allcounts at commit).
   */
  constructor(
    readonly redis: DedupeRedis,
    readonly crawlId: string,
    readonly concurrent = false,
  ) {}

  private get keys() {
    return keysOf(this.redis);
  }
  /** Packaged WACZ entries never change: the sharded layout's lookups read each once (it lives in another slot). */
  private readonly finishedWacz = new Map<string, WaczEntry>();

  /** Mark this crawl as in progress (not used by other crawls until committed, unless concurrent). */
  async registerCrawl(): Promise<void> {
    const committed = await this.redis.sismember(this.keys.allCrawls, this.crawlId);
    if (committed) return;
    const transaction = this.redis.multi().sadd(this.keys.uncommittedCrawls, this.crawlId);
    if (this.concurrent) transaction.sadd(this.keys.concurrentCrawls, this.crawlId);
    await transaction.exec();
    // Resumed with --dedupeConcurrent after a run without it: what that run indexed is published too.
    if (this.concurrent) await mergeCrawlHashes(this.redis, this.crawlId);
  }

  async lookup(digest: string): Promise<OriginalCapture | null> {
    const layout = layoutOf(this.redis);
    let result: [string, string, string | null] | null;
    let wacz: WaczEntry | null;
    if (layout.kind === "sharded") {
      const found = await lookupSharded(this.redis, layout, this.crawlId, digest);
      if (!found) return null;
      const entry = parseHashEntry(found[1]);
      if (!entry) return null;
      result = [found[0], found[1], null];
      if (found[0] === this.crawlId) wacz = await this.waczEntryOf(found[0], entry.waczIndex);
      else {
        // Another crawl's original: one call to {dd} says whether it is being purged, with its WACZ entry unless cached.
        const cached = this.finishedWacz.get(`${found[0]} ${entry.waczIndex}`);
        const reply = (await this.redis.eval(
          OTHER_CRAWL_WACZ_LUA(this.redis), 1, this.keys.purging, found[0], entry.waczIndex, cached ? "1" : "0",
        )) as [string] | "" | null;
        if (reply === null) return null;
        wacz = cached ?? this.keepIfFinished(found[0], entry.waczIndex, parseWaczEntry(reply === "" ? null : reply[0] || null));
      }
    } else {
      result = (await this.redis.eval(
        LOOKUP_LUA, 3, this.keys.crawlHashes(this.crawlId), this.keys.allHashes, this.keys.purging, digest, this.crawlId,
      )) as [string, string, string | null] | null;
      if (!result) return null;
      wacz = parseWaczEntry(result[2]);
    }
    const entry = parseHashEntry(result[1]);
    if (!entry) return null;
    return { ...entry, crawlId: result[0], waczFilename: wacz?.filename ?? null, waczFinished: Boolean(wacz?.hash && wacz.size !== undefined) };
  }

  private async waczEntryOf(crawlId: string, waczIndex: number): Promise<WaczEntry | null> {
    const cached = this.finishedWacz.get(`${crawlId} ${waczIndex}`);
    if (cached) return cached;
    return this.keepIfFinished(crawlId, waczIndex, parseWaczEntry(await this.redis.lindex(this.keys.crawlWaczList(crawlId), waczIndex)));
  }

  private keepIfFinished(crawlId: string, waczIndex: number, entry: WaczEntry | null): WaczEntry | null {
    if (entry?.hash && entry.size !== undefined) this.finishedWacz.set(`${crawlId} ${waczIndex}`, entry);
    return entry;
  }

  /** Record this crawl's original response for a digest; the first writer wins. */
  async addOriginal(digest: string, entry: HashEntry): Promise<boolean> {
    const layout = layoutOf(this.redis);
    if (layout.kind === "sharded") return addOriginalSharded(this.redis, layout, this.crawlId, digest, formatHashEntry(entry), this.concurrent);
    if (!this.concurrent) return (await this.redis.hsetnx(this.keys.crawlHashes(this.crawlId), digest, formatHashEntry(entry))) === 1;
    const added = await this.redis.eval(ADD_ORIGINAL_LIVE_LUA, 2, this.keys.crawlHashes(this.crawlId), this.keys.allHashes, digest, formatHashEntry(entry), this.crawlId);
    return added === 1;
  }

  /**
   * Add a capture's counts in one script. With `noteId` (a note replayed from the journal), only if that
   * note was not applied before: its id joins h:<crawlId>:notes in the same step, so counts never double.
   */
  async addCounts(counts: Partial<Record<CountField, number>>, noteId?: string): Promise<void> {
    const fields = Object.entries(counts).filter(([, amount]) => amount).flatMap(([field, amount]) => [field, String(amount)]);
    await this.redis.eval(ADD_COUNTS_LUA, 2, this.keys.crawlCounts(this.crawlId), this.keys.appliedNotes(this.crawlId), noteId ?? "", ...fields);
  }

  /** Of these note ids, those whose counts this crawl has not added yet (see addCounts). */
  async unappliedNotes(noteIds: string[]): Promise<string[]> {
    if (!noteIds.length) return [];
    const applied = await this.redis.smismember(this.keys.appliedNotes(this.crawlId), ...noteIds);
    return noteIds.filter((_, i) => applied[i] !== 1);
  }

  async counts(crawlId = this.crawlId): Promise<Record<CountField, number>> {
    const raw = await this.redis.hgetall(this.keys.crawlCounts(crawlId));
    return Object.fromEntries(COUNT_FIELDS.map((f) => [f, Number(raw[f] ?? 0)])) as Record<CountField, number>;
  }

  /** The WACZ's index in c:<crawlId>:wacz, pushing a placeholder the first time. */
  async registerWacz(filename: string): Promise<number> {
    return (await this.redis.eval(REGISTER_WACZ_LUA, 1, this.keys.crawlWaczList(this.crawlId), filename)) as number;
  }

  async finishWacz(index: number, entry: Required<WaczEntry>): Promise<void> {
    const json = JSON.stringify({ filename: entry.filename, hash: entry.hash, size: entry.size });
    const result = (await this.redis.eval(
      FINISH_WACZ_LUA, 2, this.keys.crawlWaczList(this.crawlId), this.keys.crawlCounts(this.crawlId),
      index, json, entry.hash, entry.size,
    )) as number;
    if (result < 0) throw new Error(`c:${this.crawlId}:wacz has no entry ${index}`);
  }

  /** Delete c:<crawlId>:wacz if it holds only placeholders of a crawl that is in no crawl set (nothing refers to it). */
  async dropUnusedWaczList(): Promise<void> {
    const [committed, uncommitted] = await Promise.all([
      this.redis.sismember(this.keys.allCrawls, this.crawlId),
      this.redis.sismember(this.keys.uncommittedCrawls, this.crawlId),
    ]);
    if (committed || uncommitted) return;
    if ((await this.waczEntries()).every((entry) => !entry?.hash)) await this.redis.del(this.keys.crawlWaczList(this.crawlId));
  }

  async waczEntries(crawlId = this.crawlId): Promise<(WaczEntry | null)[]> {
    return (await this.redis.lrange(this.keys.crawlWaczList(crawlId), 0, -1)).map(parseWaczEntry);
  }
}
