import { parseWaczEntry, type CaptureRecord } from "./indexKeys.js";
import type { LuaKeys } from "./indexKeys.js";
import { keysOf, scriptByLayout, type DedupeRedis } from "./indexLayout.js";
import type { MergeTarget } from "./mergeLease.js";
import { fencedArgs, fencedScript } from "../ownership/fencedLease.js";

/** The latest committed capture of a URL, with where it is and what the page linked to. */
export interface KnownCapture extends CaptureRecord {
  url: string;
  crawlId: string;
  waczFilename: string | null;
  outlinks: string[] | null;
}

// allurls -> crawl -> u:<crawl>[url], o:<crawl>[url], c:<crawl>:wacz[waczIndex] in one round trip; never a
// crawl being purged (KEYS[2]).
const LATEST_LUA = scriptByLayout((LUA_KEY) => `
local crawl = redis.call('HGET', KEYS[1], ARGV[1])
if not crawl or redis.call('SISMEMBER', KEYS[2], crawl) == 1 then return false end
local capture = redis.call('HGET', ${LUA_KEY.crawlCaptures("crawl")}, ARGV[1])
if not capture then return false end
local outlinks = redis.call('HGET', ${LUA_KEY.crawlOutlinks("crawl")}, ARGV[1]) or false
local index = tonumber(cjson.decode(capture).waczIndex)
local wacz = false
if index then wacz = redis.call('LINDEX', ${LUA_KEY.crawlWaczList("crawl")}, index) end
return {crawl, capture, outlinks, wacz}
`);

// Merge one HSCAN page of u:<crawl> into allurls: a URL points at the crawl with its newest capture.
const mergeUrlsPage = (LUA_KEY: LuaKeys) => `
local function newer(a, b)
  local da, db = cjson.decode(a).date, cjson.decode(b).date
  local sa, sb = string.sub(da, 1, 14), string.sub(db, 1, 14)
  if sa ~= sb then return sa > sb end
  return da >= db
end
local page = redis.call('HSCAN', ${LUA_KEY.crawlCaptures("ARGV[1]")}, ARGV[2], 'COUNT', 2000)
local fields = page[2]
for i = 1, #fields, 2 do
  local current = redis.call('HGET', KEYS[1], fields[i])
  local currentCapture = current and redis.call('HGET', ${LUA_KEY.crawlCaptures("current")}, fields[i])
  if not currentCapture or newer(fields[i + 1], currentCapture) then redis.call('HSET', KEYS[1], fields[i], ARGV[1]) end
end
return page[1]
`;
const MERGE_URLS_LUA = scriptByLayout(mergeUrlsPage);
// The same into the allurls a purge rebuilds, fenced by its merge lease.
const MERGE_URLS_REBUILD_LUA = scriptByLayout((lua) => fencedScript(mergeUrlsPage(lua)));

// Set u:<crawl>[url] unless what is there is newer (by date: seconds, then the fraction).
const RECORD_CAPTURE_LUA = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then
  local dc, dn = cjson.decode(current).date, cjson.decode(ARGV[2]).date
  local sc, sn = string.sub(dc, 1, 14), string.sub(dn, 1, 14)
  if sc > sn or (sc == sn and dc > dn) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

/**
 * Capture history in the dedupe Redis: what each crawl captured of each URL (u:<crawlId>), pages'
 * outlinks (o:<crawlId>) and, for committed crawls, the latest capture of every URL (allurls).
 */
export class CaptureHistory {
  constructor(
    readonly redis: DedupeRedis,
    private readonly crawlId: string,
  ) {}

  private get keys() {
    return keysOf(this.redis);
  }

  /** The URL's capture in this crawl, unless a newer one is recorded (a retried note may come late). */
  async recordCapture(url: string, capture: CaptureRecord): Promise<void> {
    await this.redis.eval(RECORD_CAPTURE_LUA, 1, this.keys.crawlCaptures(this.crawlId), url, JSON.stringify(capture));
  }

  async recordOutlinks(url: string, outlinks: string[]): Promise<void> {
    await this.redis.hset(this.keys.crawlOutlinks(this.crawlId), url, JSON.stringify(outlinks));
  }

  /** This crawl's own capture of a URL (written live, before commit). */
  async ownCapture(url: string): Promise<CaptureRecord | null> {
    const json = await this.redis.hget(this.keys.crawlCaptures(this.crawlId), url);
    return json ? (JSON.parse(json) as CaptureRecord) : null;
  }

  /** The latest capture of a URL among committed crawls. */
  async latest(url: string): Promise<KnownCapture | null> {
    const result = (await this.redis.eval(LATEST_LUA(this.redis), 2, this.keys.allUrls, this.keys.purging, url)) as [string, string, string | null, string | null] | null;
    if (!result) return null;
    const [crawlId, capture, outlinks, wacz] = result;
    return {
      ...(JSON.parse(capture) as CaptureRecord),
      url,
      crawlId,
      outlinks: outlinks ? (JSON.parse(outlinks) as string[]) : null,
      waczFilename: parseWaczEntry(wacz)?.filename ?? null,
    };
  }
}

/** Every capture of a URL in committed crawls, newest first. */
export async function listCaptures(redis: DedupeRedis, url: string): Promise<KnownCapture[]> {
  const dedupeKeys = keysOf(redis);
  const crawls = (await redis.smembers(dedupeKeys.allCrawls)).sort();
  const pipeline = redis.pipeline();
  for (const crawlId of crawls) pipeline.hget(dedupeKeys.crawlCaptures(crawlId), url).lrange(dedupeKeys.crawlWaczList(crawlId), 0, -1);
  const results = (await pipeline.exec()) ?? [];
  const captures: KnownCapture[] = [];
  crawls.forEach((crawlId, i) => {
    const capture = results[i * 2]?.[1] as string | null;
    if (!capture) return;
    const record = JSON.parse(capture) as CaptureRecord;
    const waczList = (results[i * 2 + 1]?.[1] as string[] | undefined) ?? [];
    captures.push({ ...record, url, crawlId, outlinks: null, waczFilename: parseWaczEntry(waczList[record.waczIndex] ?? null)?.filename ?? null });
  });
  return captures.sort((a, b) => (a.date.slice(0, 14) === b.date.slice(0, 14) ? b.date.localeCompare(a.date) : b.date.slice(0, 14).localeCompare(a.date.slice(0, 14))));
}

/** Point allurls (or the one a purge is rebuilding) at a committed crawl's captures where they are the newest (idempotent). */
export async function mergeCrawlUrls(redis: DedupeRedis, crawlId: string, into: MergeTarget = "live"): Promise<void> {
  const dedupeKeys = keysOf(redis);
  let cursor = "0";
  do {
    cursor = (await (into === "live"
      ? redis.eval(MERGE_URLS_LUA(redis), 1, dedupeKeys.allUrls, crawlId, cursor)
      : redis.eval(MERGE_URLS_REBUILD_LUA(redis), ...fencedArgs(into.fence, [dedupeKeys.rebuildUrls], [crawlId, cursor])))) as string;
  } while (cursor !== "0");
}
