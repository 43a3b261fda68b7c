// What each imported WACZ's revisits conserved (conservedSize), counted once every queued WACZ is imported:
// the originals they point at are all in the index then, so the sum does not depend on the order the WACZ
// files were imported in. Each WACZ waits in src:conserve (importWacz.ts puts it there);
// any run may count it (a killed run's too), and the count is added once: the step that adds it takes the
// WACZ out of src:conserve, and whoever does so second adds nothing. Two runs count the same sum.
import { keysOf, layoutOf, LUA_KEY, type DedupeRedis, entriesSharded, captureKind, cdxWarcType } from "../src/dedupe/index.js";
import { pauseForTests } from "../src/util/testSeams.js";
import { errorMessage, logger } from "../src/log/logger.js";
import { iterWaczCdxjRecordBatches, openWacz } from "../src/wacz/reader/index.js";
import { payloadDigestOf } from "./importWacz.js";
import type { ImportResource } from "./sources.js";
import type { SourceProblem } from "./sources.js";

// Sizes of the original responses of revisit digests: the crawl's own hashes, then the merged index
// (the same order the crawler looks them up in). Single-node layout (the sharded one: entriesSharded).
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

// KEYS: conserve, crawlCounts, allCounts, allCrawls; ARGV: name, crawlId, amount.
const ADD_CONSERVED_LUA = `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('SISMEMBER', KEYS[4], ARGV[2]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[2], 'conservedSize', tonumber(ARGV[3]))
redis.call('HINCRBY', KEYS[3], 'conservedSize', tonumber(ARGV[3]))
return 1
`;

interface WaitingWacz {
  resource: ImportResource;
  waczIndex: number;
}

/** Count conservedSize of every WACZ waiting in src:conserve; returns those that could not be read (left for a later run). */
export async function countConservedSizes(redis: DedupeRedis): Promise<SourceProblem[]> {
  const dedupeKeys = keysOf(redis);
  const problems: SourceProblem[] = [];
  const waiting = Object.entries(await redis.hgetall(dedupeKeys.importConserve)).sort(([a], [b]) => a.localeCompare(b));
  for (const [name, json] of waiting) {
    const { resource } = JSON.parse(json) as WaitingWacz;
    try {
      const amount = await conservedBy(redis, resource);
      await pauseForTests("indexer-conserved");
      await redis.eval(ADD_CONSERVED_LUA, 4, dedupeKeys.importConserve, dedupeKeys.crawlCounts(resource.crawlId), dedupeKeys.allCounts, dedupeKeys.allCrawls, name, resource.crawlId, amount);
    } catch (err) {
      const message = `conservedSize not counted yet (a later run will): ${errorMessage(err).replace(`${resource.location}: `, "")}`;
      logger.error("indexer", `${name}: ${message}`);
      problems.push({ entry: name, message });
    }
  }
  return problems;
}

/** Sum over a WACZ's revisits of the size of the original each points at less its own. */
async function conservedBy(redis: DedupeRedis, resource: ImportResource): Promise<number> {
  const dedupeKeys = keysOf(redis);
  const layout = layoutOf(redis);
  const reader = await openWacz(resource.location);
  let conservedSize = 0;
  try {
    for await (const records of iterWaczCdxjRecordBatches(reader)) {
      const revisits = records.filter((cdx) => cdx.digest && captureKind(cdxWarcType(cdx.mime, cdx.status), cdx.url) === "revisit");
      if (!revisits.length) continue;
      const digests = revisits.map((cdx) => payloadDigestOf(cdx.digest!));
      const sizes = layout.kind === "sharded"
        ? (await entriesSharded(redis, layout, resource.crawlId, digests)).map((value) => (value && /(\d+)$/.exec(value)?.[1]) ?? "-1")
        : ((await redis.eval(ORIGINAL_SIZES_LUA, 2, dedupeKeys.crawlHashes(resource.crawlId), dedupeKeys.allHashes, ...digests)) as string[]);
      revisits.forEach((cdx, i) => {
        const original = Number(sizes[i]);
        if (original >= 0) conservedSize += original - Number(cdx.length ?? 0);
      });
    }
  } finally {
    await reader.close();
  }
  return conservedSize;
}
