import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { fileURLToPath } from "node:url";
import { COUNT_FIELDS, formatHashEntry, LUA_KEY, keysOf, layoutOf, scriptByLayout, type DedupeRedis, entriesSharded, rollbackWaczSharded, writeEntriesSharded, captureKind, cdxWarcType, EMPTY_PAYLOAD_DIGEST, isIndexablePayload, tallyCounts, DedupeIndex, pauseForTests } from "../src/dedupe/index.js";
import { iterWaczCdxjRecordBatches, openWacz, type WaczReader } from "../src/wacz/reader/index.js";
import { HashWriteBatch } from "./hashWriteBatch.js";
import type { ImportResource } from "./sources.js";

// A batch is two commands (hashWriteBatch.ts): a native HSET of its entries into h:<crawlId> (re-importing
// writes the same values; within a crawl the last of several WACZ files holding a payload wins, which in
// manifest order is deterministic), then a script of HSETNX calls into allhashes, where the first crawl to
// index a payload keeps it. With --history, the capture history goes in a third call (CAPTURES_LUA).
// (The sharded layout writes hashes shard by shard, see shardedHashes.ts.)

// The capture history of a batch: KEYS[1] u:<crawl>, KEYS[2] allurls; ARGV: unused, crawlId, then url/capture pairs.
const CAPTURES_LUA = scriptByLayout((lua) => `
local crawl = ARGV[2]
-- Capture history: url -> capture JSON (which starts with its date, so dates compare without decoding);
-- the newest capture of a URL wins in u:<crawl> and in allurls.
local function newer(a, b) return string.sub(a, 10, 32) > string.sub(b, 10, 32) end
for i = 3, #ARGV - 1, 2 do
  local url, capture = ARGV[i], ARGV[i + 1]
  local own = redis.call('HGET', KEYS[1], url)
  if not own or newer(capture, own) then
    redis.call('HSET', KEYS[1], url, capture)
    local current = redis.call('HGET', KEYS[2], url)
    local currentCapture = current and redis.call('HGET', ${lua.crawlCaptures("current")}, url)
    if not currentCapture or newer(capture, currentCapture) then redis.call('HSET', KEYS[2], url, crawl) end
  end
end
`);

// Undo a failed import's capture history: drop its u:<crawl> entries (and allurls pointers to them).
const ROLLBACK_CAPTURES_LUA = `
local page = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', 5000)
local fields = page[2]
for i = 1, #fields, 2 do
  if string.find(fields[i + 1], ARGV[2], 1, true) then
    redis.call('HDEL', KEYS[1], fields[i])
    if redis.call('HGET', KEYS[2], fields[i]) == ARGV[3] then redis.call('HDEL', KEYS[2], fields[i]) end
  end
end
return page[1]
`;

// Undo a failed import: drop this WACZ's entries from h:<crawlId> (one HSCAN page per call) and the
// allhashes entries that pointed at them.
const ROLLBACK_PAGE_LUA = `
local page = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', 5000)
local fields = page[2]
for i = 1, #fields, 2 do
  if string.match(fields[i + 1], '^(%d+) ') == ARGV[2] then
    redis.call('HDEL', KEYS[1], fields[i])
    if redis.call('HGET', KEYS[2], fields[i]) == ARGV[3] then redis.call('HDEL', KEYS[2], fields[i]) end
  end
end
return page[1]
`;

// Sizes of the original responses of revisit digests: the crawl's own hashes, then the merged index
// (the same order the crawler looks them up in).
// Single-node layout (the sharded one: entriesSharded).
const ORIGINAL_SIZES_LUA = `
local sizes = {}
for i, digest in ipairs(ARGV) do
  local value = redis.call('HGET', KEYS[1], digest)
  if not value then
    local crawl = redis.call('HGET', KEYS[2], digest)
    if crawl then value = redis.call('HGET', ${LUA_KEY.crawlHashes("crawl")}, digest) end
  end
  sizes[#sizes + 1] = value and string.match(value, ' (%d+)$') or '-1'
end
return sizes
`;

// The step that makes an import count, once: counts into the crawl and allcounts, the WACZ entry
// completed, the crawl joined to allcrawls (and so no longer uncommitted or publishing as it writes), the
// WACZ marked imported.
const FINALIZE_LUA = `
-- KEYS: importDone, crawlCounts, allCounts, waczList, allCrawls, uncommitted, importInfo, concurrent
-- ARGV: name, crawlId, waczIndex, waczEntryJson, infoJson, then field/amount pairs
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
for i = 6, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[2], ARGV[i], tonumber(ARGV[i + 1]))
  redis.call('HINCRBY', KEYS[3], ARGV[i], tonumber(ARGV[i + 1]))
end
redis.call('LSET', KEYS[4], tonumber(ARGV[3]), ARGV[4])
redis.call('SADD', KEYS[5], ARGV[2])
redis.call('SREM', KEYS[6], ARGV[2])
redis.call('SREM', KEYS[8], ARGV[2])
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[7], ARGV[1], ARGV[5])
return 1
`;

const BATCH_LINES = 500;
/** Larger in the sharded layout: its batch is one call per cluster slot touched, so more lines share a call. */
const SHARDED_BATCH_LINES = 5000;
const MAX_IN_FLIGHT = 3;

export interface WaczImportResult {
  name: string;
  crawlId: string;
  waczIndex: number;
  lines: number;
  responses: number;
  revisits: number;
  /** Lines that are not HTTP captures (resource records such as urn:pageinfo:, metadata): not counted. */
  otherRecords: number;
  /** Already imported (by an earlier run, or written live by the crawler): nothing was added. */
  alreadyIndexed: boolean;
  bytesRead: number;
  size: number;
}

export class WaczImportError extends Error {}

/** CDX digests are bare hex (warcio) or prefixed; the index keys are exactly WARC-Payload-Digest. */
export function payloadDigestOf(cdxDigest: string): string {
  if (cdxDigest.includes(":")) return cdxDigest;
  // 64 hex digits: sha256; base32 sha1 (32 characters) from other tools.
  return (cdxDigest.length === 64 ? "sha256:" : "sha1:") + cdxDigest;
}

/**
 * Import one WACZ into the dedupe index. Hash writes are idempotent (a re-run, or a crash and a re-run,
 * ends the same); a WACZ whose index turns out bad part-way has its entries taken back; the counts are
 * added in one atomic step, so they are never counted twice.
 */
export async function importWacz(
  redis: DedupeRedis,
  resource: ImportResource,
  options: { history?: boolean; onProgress?: () => Promise<void> } = {},
): Promise<WaczImportResult> {
  const onProgress = options.onProgress;
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  const reader = await openWacz(resource.location);
  try {
    const datapackage = await readDatapackage(reader);
    const index = new DedupeIndex(redis, resource.crawlId);
    const waczIndex = await index.registerWacz(resource.name);
    await pauseForTests("indexer-wacz-registered");
    const size = resource.size ?? reader.size;
    const hash = resource.hash ?? (await localFileHash(resource.location)) ?? "";
    const result: WaczImportResult = {
      name: resource.name, crawlId: resource.crawlId, waczIndex, lines: 0, responses: 0, revisits: 0, otherRecords: 0,
      alreadyIndexed: false, bytesRead: 0, size,
    };

    const known = (await index.waczEntries())[waczIndex];
    if (known?.hash && known.hash === hash && (await redis.sismember(dedupeKeys.allCrawls, resource.crawlId))) {
      // The crawler committed this WACZ live: its hashes and counts are in the index already.
      await finalize(redis, resource, waczIndex, { filename: resource.name, hash, size }, datapackage.requires, {});
      return { ...result, alreadyIndexed: true, bytesRead: reader.bytesRead };
    }

    const hashesKey = dedupeKeys.crawlHashes(resource.crawlId);
    try {
      // Pass 1: index response hashes and count lines. Batches go out while the next ones are parsed;
      // a few are in flight (one running in Redis, the next ones queued), so memory stays flat.
      const batches = Array.from({ length: MAX_IN_FLIGHT + 1 }, () => new HashWriteBatch(hashesKey, dedupeKeys.allHashes, resource.crawlId));
      let current = 0;
      let batch = batches[0]!;
      let captures: string[] = [];
      // The sharded layout's batch: entries go to their shards (several calls, several nodes).
      let shardedEntries: { digest: string; value: string }[] = [];
      const inFlight = new Set<Promise<unknown>>();
      const flush = async () => {
        if (batch.lines || captures.length || shardedEntries.length) {
          const sent = Promise.all([
            layout.kind === "sharded" ? writeEntriesSharded(redis, layout, resource.crawlId, shardedEntries) : batch.lines ? batch.send(redis) : null,
            captures.length
              ? redis.eval(CAPTURES_LUA(redis), 2, dedupeKeys.crawlCaptures(resource.crawlId), dedupeKeys.allUrls, "", resource.crawlId, ...captures)
              : null,
          ]);
          shardedEntries = [];
          batch.busy = sent;
          inFlight.add(sent);
          void sent.finally(() => inFlight.delete(sent)).catch(() => undefined);
          current = (current + 1) % batches.length;
          batch = batches[current]!;
          // Replies come in order, so this one is normally free already.
          await batch.busy;
          batch.reset();
        }
        captures = [];
        while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      };
      for await (const records of iterWaczCdxjRecordBatches(reader)) {
        for (const cdx of records) {
          result.lines += 1;
          const kind = captureKind(cdxWarcType(cdx.mime, cdx.status), cdx.url);
          if (kind !== "response") {
            if (kind === "revisit") result.revisits += 1;
            else result.otherRecords += 1;
            continue;
          }
          result.responses += 1;
          const status = Number(cdx.status);
          if (!cdx.digest) continue;
          const digest = payloadDigestOf(cdx.digest);
          if (!isIndexablePayload(status, digest === EMPTY_PAYLOAD_DIGEST)) continue;
          const entry = { waczIndex, date: cdx.timestamp, url: cdx.url, size: Number(cdx.length ?? 0) };
          if (layout.kind === "sharded") shardedEntries.push({ digest, value: formatHashEntry(entry) });
          else batch.add(digest, entry);
          // The capture history from CDX: date, status, digest, WACZ (ETag, Last-Modified and outlinks are not in it).
          if (options.history) captures.push(cdx.url, `{"date":"${cdx.timestamp}","status":${status},"digest":${JSON.stringify(digest)},"waczIndex":${waczIndex}}`);
        }
        if (batch.lines >= BATCH_LINES || shardedEntries.length >= SHARDED_BATCH_LINES || captures.length >= BATCH_LINES * 2) await flush();
        await onProgress?.();
      }
      await flush();
      await Promise.all(inFlight);
      await pauseForTests("indexer-hashes-written");

      // Pass 2: what each revisit conserved, from the size of the original it points at.
      let conservedSize = 0;
      if (result.revisits) {
        for await (const records of iterWaczCdxjRecordBatches(reader)) {
          const revisits = records.filter((cdx) => cdx.digest && captureKind(cdxWarcType(cdx.mime, cdx.status), cdx.url) === "revisit");
          if (!revisits.length) continue;
          const digests = revisits.map((cdx) => payloadDigestOf(cdx.digest!));
          const sizes = layout.kind === "sharded"
            ? (await entriesSharded(redis, layout, resource.crawlId, digests)).map((value) => (value && /(\d+)$/.exec(value)?.[1]) ?? "-1")
            : ((await redis.eval(ORIGINAL_SIZES_LUA, 2, hashesKey, dedupeKeys.allHashes, ...digests)) as string[]);
          revisits.forEach((cdx, i) => {
            const original = Number(sizes[i]);
            if (original >= 0) conservedSize += original - Number(cdx.length ?? 0);
          });
        }
      }

      // Count once.
      // The same per-capture counts the crawler adds live, summed.
      await finalize(redis, resource, waczIndex, { filename: resource.name, hash, size }, datapackage.requires, {
        ...tallyCounts({ response: result.responses, revisit: result.revisits }, conservedSize),
        totalCrawlSize: size,
      });
    } catch (err) {
      // A bad index (truncated, malformed) is found part-way: take back what this WACZ added.
      await rollback(redis, resource.crawlId, waczIndex).catch(() => undefined);
      throw err;
    }
    return { ...result, bytesRead: reader.bytesRead };
  } finally {
    await reader.close();
  }
}

async function rollback(redis: DedupeRedis, crawlId: string, waczIndex: number): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  if (await redis.sismember(dedupeKeys.allCrawls, crawlId)) {
    // Entries of this WACZ may have been indexed by the crawler itself; a committed crawl keeps them.
    const entry = (await new DedupeIndex(redis, crawlId).waczEntries())[waczIndex];
    if (entry?.hash) return;
  }
  let cursor = "0";
  if (layout.kind === "sharded") await rollbackWaczSharded(redis, layout, crawlId, waczIndex);
  else do {
    cursor = (await redis.eval(ROLLBACK_PAGE_LUA, 2, dedupeKeys.crawlHashes(crawlId), dedupeKeys.allHashes, cursor, String(waczIndex), crawlId)) as string;
  } while (cursor !== "0");
  do {
    cursor = (await redis.eval(
      ROLLBACK_CAPTURES_LUA, 2, dedupeKeys.crawlCaptures(crawlId), dedupeKeys.allUrls, cursor, `"waczIndex":${waczIndex}}`, crawlId,
    )) as string;
  } while (cursor !== "0");
}

async function finalize(
  redis: DedupeRedis,
  resource: ImportResource,
  waczIndex: number,
  entry: { filename: string; hash: string; size: number },
  requires: string[],
  counts: Partial<Record<(typeof COUNT_FIELDS)[number], number>>,
): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const pairs = Object.entries(counts).flatMap(([field, amount]) => [field, String(amount)]);
  await redis.eval(
    FINALIZE_LUA, 8,
    dedupeKeys.importDone, dedupeKeys.crawlCounts(resource.crawlId), dedupeKeys.allCounts, dedupeKeys.crawlWaczList(resource.crawlId),
    dedupeKeys.allCrawls, dedupeKeys.uncommittedCrawls, dedupeKeys.importInfo, dedupeKeys.concurrentCrawls,
    resource.name, resource.crawlId, waczIndex, JSON.stringify(entry), JSON.stringify({ crawlId: resource.crawlId, requires }),
    ...pairs,
  );
}

async function readDatapackage(reader: WaczReader): Promise<{ requires: string[] }> {
  if (!reader.hasEntry("datapackage.json")) throw new WaczImportError("WACZ has no datapackage.json");
  let datapackage: { relation?: { requires?: { crawlId?: unknown }[] } };
  try {
    datapackage = JSON.parse((await reader.readEntry("datapackage.json", 20_000_000)).toString("utf8"));
  } catch (err) {
    throw new WaczImportError(`datapackage.json is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  const requires = (datapackage.relation?.requires ?? [])
    .map((r) => r.crawlId)
    .filter((id): id is string => typeof id === "string");
  return { requires: [...new Set(requires)].sort() };
}

/** sha256 of a local WACZ (remote ones are never read whole: their hash comes from the manifest). */
async function localFileHash(location: string): Promise<string | null> {
  if (!location.startsWith("file:")) return null;
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(fileURLToPath(location))) hash.update(chunk as Buffer);
  return "sha256:" + hash.digest("hex");
}
