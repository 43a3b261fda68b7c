// A refresh's 304 revisit names the response record that holds the confirmed payload, whatever the capture
// history says of the capture it confirms: the response that capture was a revisit of (recorded, or for
// a history written before revisits kept it, found in the dedupe index), never a revisit.
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KnownCapture } from "../../../src/dedupe/captureHistory.js";
import { commitCrawl } from "../../../src/dedupe/commit.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { createShardedLayout, keysOf, type DedupeRedis } from "../../../src/dedupe/indexLayout.js";
import { payloadResponseOf, recordedPayloadResponse } from "../../../src/dedupe/payloadResponse.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();

const PAYLOAD = "sha256:" + "c6".repeat(32);
const UNINDEXED = "sha256:" + "e3".repeat(32);
const PAGE = "http://site.test/search.html";
const ALIAS = "http://site.test/search.html?q=";
/** Crawl "one" (one.wacz): the page's response, then the alias as a revisit of it. */
const PAGE_DATE = "20260101000000123";
const ALIAS_DATE = "20260101000001456";

/** A committed crawl whose one WACZ holds responses of these payloads (digest -> url, date). */
async function committedCrawl(client: DedupeRedis, crawlId: string, responses: Record<string, { url: string; date: string }>): Promise<void> {
  const index = new DedupeIndex(client, crawlId);
  await index.registerCrawl();
  const waczIndex = await index.registerWacz(`${crawlId}.wacz`);
  for (const [digest, { url, date }] of Object.entries(responses)) await index.addOriginal(digest, { waczIndex, date, url, size: 3000 });
  await index.finishWacz(waczIndex, { filename: `${crawlId}.wacz`, hash: `sha256:${crawlId}`, size: 10_000 });
  await commitCrawl(client, crawlId);
}

/** A capture as the history returns it (crawl "one" unless said). */
const capture = (fields: Partial<KnownCapture> & Pick<KnownCapture, "url" | "date">): KnownCapture => ({
  status: 200, digest: PAYLOAD, waczIndex: 0, crawlId: "one", waczFilename: "one.wacz", outlinks: null, etag: '"v1"', ...fields,
});
const PAGE_RESPONSE = { url: PAGE, crawlId: "one", date: PAGE_DATE, waczIndex: 0, waczFilename: "one.wacz" };

describe("the response record a capture's payload is in", () => {
  it("is what the history recorded for a revisit (its original with its URL), and nothing for any other capture", () => {
    const original = { crawlId: "one", date: PAGE_DATE, waczIndex: 0, url: PAGE };
    expect(recordedPayloadResponse(capture({ url: ALIAS, date: ALIAS_DATE, original }))).toEqual({ url: PAGE, crawlId: "one", date: PAGE_DATE, waczIndex: 0 });
    // A 304 recorded before originals kept their URL, and a capture without original: the history does not say.
    expect(recordedPayloadResponse(capture({ url: ALIAS, date: ALIAS_DATE, status: 304, original: { crawlId: "one", date: ALIAS_DATE, waczIndex: 0 } }))).toBeNull();
    expect(recordedPayloadResponse(capture({ url: PAGE, date: PAGE_DATE }))).toBeNull();
  });

  for (const layout of ["single", "sharded"] as const) {
    describe(`in the ${layout} layout`, () => {
      let client: Redis;
      beforeEach(async () => {
        // A connection of its own: the layout is learned per connection.
        client = new Redis(redis.url);
        if (layout === "sharded") await createShardedLayout(client, 2);
        await committedCrawl(client, "one", { [PAYLOAD]: { url: PAGE, date: PAGE_DATE } });
      });
      afterEach(() => client.disconnect());

      it("a revisit recorded with its original: that response, in its crawl's WACZ", async () => {
        await committedCrawl(client, "two", {});
        const revisit = capture({ url: ALIAS, date: "20260201000000000", crawlId: "two", waczFilename: "two.wacz", original: { crawlId: "one", date: PAGE_DATE, waczIndex: 0, url: PAGE } });
        expect(await payloadResponseOf(client, revisit)).toEqual(PAGE_RESPONSE);
      });

      it("a revisit recorded without it (an earlier version's history): the response the dedupe index holds, not the revisit", async () => {
        expect(await payloadResponseOf(client, capture({ url: ALIAS, date: ALIAS_DATE }))).toEqual(PAGE_RESPONSE);
      });

      it("a 304 recorded without its payload's URL, which confirmed such a revisit: the response the dedupe index holds", async () => {
        await committedCrawl(client, "two", {});
        const notModified = capture({ url: ALIAS, date: "20260201000000000", status: 304, crawlId: "two", waczFilename: "two.wacz", original: { crawlId: "one", date: ALIAS_DATE, waczIndex: 0 } });
        expect(await payloadResponseOf(client, notModified)).toEqual(PAGE_RESPONSE);
      });

      it("a response: itself", async () => {
        expect(await payloadResponseOf(client, capture({ url: PAGE, date: PAGE_DATE }))).toEqual(PAGE_RESPONSE);
      });
    });
  }

  it("a payload the index does not hold (never deduped): the capture itself, or for a 304 the capture it confirmed", async () => {
    await committedCrawl(redis.client, "one", {});
    await committedCrawl(redis.client, "two", {});
    const empty = capture({ url: PAGE, date: PAGE_DATE, digest: UNINDEXED });
    expect(await payloadResponseOf(redis.client, empty)).toEqual(PAGE_RESPONSE);
    const notModified = capture({ url: PAGE, date: "20260201000000000", digest: UNINDEXED, status: 304, crawlId: "two", waczFilename: "two.wacz", original: { crawlId: "one", date: PAGE_DATE, waczIndex: 0 } });
    expect(await payloadResponseOf(redis.client, notModified)).toEqual(PAGE_RESPONSE);
  });

  it("a recorded response whose crawl is being removed: another response of the payload the index holds, else none", async () => {
    await committedCrawl(redis.client, "one", { [PAYLOAD]: { url: PAGE, date: PAGE_DATE } });
    await committedCrawl(redis.client, "two", {});
    const revisit = capture({ url: ALIAS, date: "20260201000000000", crawlId: "two", waczFilename: "two.wacz", original: { crawlId: "one", date: PAGE_DATE, waczIndex: 0, url: PAGE } });
    await redis.client.sadd(keysOf(redis.client).purging, "one");
    expect(await payloadResponseOf(redis.client, revisit)).toBeNull();
    // The capture's own crawl holds a response of the same payload (a copy stored in full).
    await redis.client.hset("h:two", PAYLOAD, `0 20260201000000999 http://site.test/copy.html 3000`);
    expect(await payloadResponseOf(redis.client, revisit)).toEqual({ url: "http://site.test/copy.html", crawlId: "two", date: "20260201000000999", waczIndex: 0, waczFilename: "two.wacz" });
    // Removed (its WACZ list gone, no longer being removed): the same.
    await redis.client.del("c:one:wacz", "h:one");
    await redis.client.srem(keysOf(redis.client).purging, "one");
    expect(await payloadResponseOf(redis.client, revisit)).toEqual({ url: "http://site.test/copy.html", crawlId: "two", date: "20260201000000999", waczIndex: 0, waczFilename: "two.wacz" });
  });
});
