import type { KnownCapture } from "./captureHistory.js";
import { DedupeIndex } from "./dedupeIndex.js";
import { parseWaczEntry } from "./indexKeys.js";
import { keysOf, scriptByLayout, type DedupeRedis } from "./indexLayout.js";

/**
 * The response record holding a payload: what a revisit names (WARC-Refers-To-Target-URI, -Date,
 * -Container) and what its WACZ requires. Never a revisit: replay tools resolve a revisit one step, to a
 * record that is not a revisit, so a revisit naming another revisit leaves its page missing.
 */
export interface PayloadResponse {
  url: string;
  crawlId: string;
  /** WARC-Date digits of the response record. */
  date: string;
  waczIndex: number;
  waczFilename: string | null;
}

// c:<crawl>:wacz[index] (KEYS[1] purging; ARGV crawl, index), or nothing while that crawl is being purged
// (its records are going away).
const WACZ_ENTRY_LUA = scriptByLayout((lua) => `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return false end
return redis.call('LINDEX', ${lua.crawlWaczList("ARGV[1]")}, tonumber(ARGV[2]))
`);

/**
 * The response the capture history names for a capture's payload, if it names one: the capture's
 * `original` when it has its URL (the crawler writes one naming a response only). Null when the history
 * does not say: the capture may be a response, or a revisit recorded before revisits kept their original.
 */
export function recordedPayloadResponse(capture: KnownCapture): Omit<PayloadResponse, "waczFilename"> | null {
  const original = capture.original;
  if (!original?.url) return null;
  return { url: original.url, crawlId: original.crawlId, date: original.date, waczIndex: original.waczIndex };
}

/**
 * The response record holding a capture's payload, for a revisit that confirms the capture (a refresh's
 * 304). The response the history recorded, while its crawl is in the index. Otherwise the dedupe index's
 * original of the payload (every original there is a response): looked up first in the crawl the history
 * says holds the payload (a response is normally its crawl's original of its payload: the capture itself),
 * then among committed crawls. A payload the index does not hold was never deduped: the capture holds it.
 * Null when the recorded response is gone (its crawl removed) and no other crawl holds the payload.
 */
export async function payloadResponseOf(redis: DedupeRedis, capture: KnownCapture): Promise<PayloadResponse | null> {
  const recorded = recordedPayloadResponse(capture);
  if (recorded) {
    const wacz = await waczEntryOf(redis, recorded.crawlId, recorded.waczIndex);
    if (wacz !== undefined) return { ...recorded, waczFilename: wacz };
  }
  // A recorded response that is gone leaves the capture's own crawl (committed, not being purged) to start from.
  const crawlId = recorded ? capture.crawlId : capture.original?.crawlId ?? capture.crawlId;
  const indexed = await new DedupeIndex(redis, crawlId).lookup(capture.digest);
  if (indexed) return { url: indexed.url, crawlId: indexed.crawlId, date: indexed.date, waczIndex: indexed.waczIndex, waczFilename: indexed.waczFilename };
  if (recorded) return null;
  if (!capture.original) return { url: capture.url, crawlId: capture.crawlId, date: capture.date, waczIndex: capture.waczIndex, waczFilename: capture.waczFilename };
  // A 304 recorded without its payload's URL confirmed an earlier capture of the same URL.
  const { date, waczIndex } = capture.original;
  return { url: capture.url, crawlId, date, waczIndex, waczFilename: (await waczEntryOf(redis, crawlId, waczIndex)) ?? null };
}

/** The filename of WACZ `waczIndex` of a crawl; undefined when the crawl is being purged or has no such WACZ. */
async function waczEntryOf(redis: DedupeRedis, crawlId: string, waczIndex: number): Promise<string | undefined> {
  const entry = (await redis.eval(WACZ_ENTRY_LUA(redis), 1, keysOf(redis).purging, crawlId, waczIndex)) as string | null;
  return parseWaczEntry(entry)?.filename;
}
