import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { fileURLToPath } from "node:url";
import { COUNT_FIELDS, formatHashEntry, keysOf, layoutOf, scriptByLayout, type DedupeRedis, rollbackWaczSharded, writeEntriesSharded, captureKind, cdxWarcType, EMPTY_PAYLOAD_DIGEST, isIndexablePayload, tallyCounts, DedupeIndex, CrawlRanks, COMMIT_GUARD_LUA, epochWhenNoRebuild, mergeCrawlHashes } from "../src/dedupe/index.js";
import { pauseForTests } from "../src/util/testSeams.js";
import { iterWaczCdxjRecordBatches, openWacz, type WaczReader } from "../src/wacz/reader/index.js";
import { HashWriteBatch } from "./hashWriteBatch.js";
import type { ImportResource } from "./sources.js";

// A batch is one script call (hashWriteBatch.ts): its entries into h:<crawlId> (within a crawl the entry of
// the WACZ latest in its list wins, whatever the import order) and allhashes (payloads no crawl holds yet);
// payloads other crawls hold come back and go to the crawl first in crawlorder (payloadOwnership.ts). With
// --history, the capture history goes in a second call (CAPTURES_LUA). (The sharded layout writes hashes
// shard by shard, see shardedImport.ts.) What revisits conserved is counted once every queued WACZ is
// imported (conservedSize.ts): the originals they point at are all in the index then, whatever the order.

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

// The step that makes an import count, once: counts into the crawl and allcounts, the WACZ entry
// completed, the crawl joined to allcrawls (and so no longer uncommitted or publishing as it writes), the
// WACZ marked imported and, if it has revisits, left for conservedSize.ts. Not while a purge rebuilds
// allhashes or after one replaced it since the import began (mergeLease.ts): then -1, merge again.
const FINALIZE_LUA = `
-- KEYS: importDone, crawlCounts, allCounts, waczList, allCrawls, uncommitted, importInfo, concurrent, conserve, mergeLease, mergeEpoch
-- ARGV: name, crawlId, waczIndex, waczEntryJson, infoJson, conserveJson ('' if none), epoch, then field/amount pairs
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end${COMMIT_GUARD_LUA("KEYS[10]", "KEYS[11]", "ARGV[7]")}
if ARGV[6] ~= '' then redis.call('HSET', KEYS[9], ARGV[1], ARGV[6]) end
for i = 8, #ARGV, 2 do
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
    // A purge rebuilding allhashes meanwhile would replace what this import writes: checked at finalize.
    const epoch = await epochWhenNoRebuild(redis);
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
      await finalize(redis, resource, { waczIndex, epoch, revisits: false }, { filename: resource.name, hash, size }, datapackage.requires, {});
      return { ...result, alreadyIndexed: true, bytesRead: reader.bytesRead };
    }

    const hashesKey = dedupeKeys.crawlHashes(resource.crawlId);
    try {
      // Pass 1: index response hashes and count lines. Batches go out while the next ones are parsed;
      // a few are in flight (one running in Redis, the next ones queued), so memory stays flat.
      const batches = Array.from({ length: MAX_IN_FLIGHT + 1 }, () => new HashWriteBatch(hashesKey, dedupeKeys.allHashes, resource.crawlId));
      const order = new CrawlRanks(redis);
      const claims: Promise<void>[] = [];
      let current = 0;
      let batch = batches[0]!;
      let captures: string[] = [];
      // The sharded layout's batch: entries go to their shards (several calls, several nodes).
      let shardedEntries: { digest: string; value: string }[] = [];
      const inFlight = new Set<Promise<unknown>>();
      const flush = async () => {
        if (batch.lines || captures.length || shardedEntries.length) {
          const written = layout.kind === "sharded" ? writeEntriesSharded(redis, layout, resource.crawlId, shardedEntries) : batch.lines ? batch.send(redis) : null;
          // Payloads other crawls hold: the crawl order decides (after this batch's reply, beside the next batches).
          if (written) claims.push(written.then((held) => order.claim(resource.crawlId, held)));
          const sent = Promise.all([
            written,
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
      await Promise.all(claims);
      await pauseForTests("indexer-hashes-written");

      // Count once: the same per-capture counts the crawler adds live, summed (conservedSize later).
      await finalize(redis, resource, { waczIndex, epoch, revisits: result.revisits > 0 }, { filename: resource.name, hash, size }, datapackage.requires, {
        ...tallyCounts({ response: result.responses, revisit: result.revisits }, 0),
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

/** What finalize needs of one import: the WACZ's place, the merge epoch it began in, whether it has revisits to count later. */
interface ImportPlace {
  waczIndex: number;
  epoch: string;
  revisits: boolean;
}

async function finalize(
  redis: DedupeRedis,
  resource: ImportResource,
  place: ImportPlace,
  entry: { filename: string; hash: string; size: number },
  requires: string[],
  counts: Partial<Record<(typeof COUNT_FIELDS)[number], number>>,
): Promise<void> {
  const dedupeKeys = keysOf(redis);
  const pairs = Object.entries(counts).flatMap(([field, amount]) => [field, String(amount)]);
  const conserve = place.revisits ? JSON.stringify({ resource, waczIndex: place.waczIndex }) : "";
  let epoch = place.epoch;
  for (;;) {
    const done = (await redis.eval(
      FINALIZE_LUA, 11,
      dedupeKeys.importDone, dedupeKeys.crawlCounts(resource.crawlId), dedupeKeys.allCounts, dedupeKeys.crawlWaczList(resource.crawlId),
      dedupeKeys.allCrawls, dedupeKeys.uncommittedCrawls, dedupeKeys.importInfo, dedupeKeys.concurrentCrawls, dedupeKeys.importConserve,
      dedupeKeys.mergeLease, dedupeKeys.mergeEpoch,
      resource.name, resource.crawlId, place.waczIndex, JSON.stringify(entry), JSON.stringify({ crawlId: resource.crawlId, requires }), conserve, epoch,
      ...pairs,
    )) as number;
    if (done >= 0) return;
    // A purge rebuilt allhashes while this WACZ was imported: what it wrote there may be gone; again (idempotent).
    epoch = await epochWhenNoRebuild(redis);
    await mergeCrawlHashes(redis, resource.crawlId);
  }
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
