import { describe, expect, it } from "vitest";
import { cancelCrawl, commitCrawl } from "../../../src/dedupe/commit.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { digitsToWarcDate, warcDateToDigits } from "../../../src/archive/warcDate.js";
import { formatHashEntry, parseHashEntry } from "../../../src/dedupe/indexKeys.js";
import { usePrivateRedis } from "../../helpers/redis.js";
import { Deduplicator } from "../../../src/dedupe/deduplicator.js";

const redis = usePrivateRedis();

const DIGEST = "sha256:" + "ab".repeat(32);
const entry = { waczIndex: 0, date: "20260102030405678", url: "http://a.test/x", size: 1234 };

describe("hash entry format", () => {
  it("round-trips, and a URL with spaces cannot break it", () => {
    const spaced = { waczIndex: 3, date: "20260102030405", url: "http://a.test/a b  c", size: 99 };
    expect(formatHashEntry(spaced)).toBe("3 20260102030405 http://a.test/a b  c 99");
    expect(parseHashEntry(formatHashEntry(spaced))).toEqual(spaced);
    expect(parseHashEntry("garbage")).toBeNull();
    expect(parseHashEntry("x 20260102030405 http://a 1")).toBeNull();
  });

  it("keeps the WARC-Date exactly through its digit form", () => {
    expect(warcDateToDigits("2026-01-02T03:04:05.678Z")).toBe("20260102030405678");
    expect(digitsToWarcDate("20260102030405678")).toBe("2026-01-02T03:04:05.678Z");
    expect(digitsToWarcDate("20260102030405")).toBe("2026-01-02T03:04:05Z");
  });
});

describe("dedupe index", () => {
  it("uses a crawl's own hashes at once, other crawls' only once committed", async () => {
    const x = new DedupeIndex(redis.client, "X");
    const y = new DedupeIndex(redis.client, "Y");
    await x.registerCrawl();
    await y.registerCrawl();
    expect(await redis.client.smembers("uncommittedcrawls")).toEqual(expect.arrayContaining(["X", "Y"]));
    await x.registerWacz("x.wacz");
    expect(await x.addOriginal(DIGEST, entry)).toBe(true);
    expect(await x.addOriginal(DIGEST, { ...entry, url: "http://a.test/other" })).toBe(false); // first writer wins
    expect(await x.lookup(DIGEST)).toEqual({ ...entry, crawlId: "X", waczFilename: "x.wacz", waczFinished: false });
    expect(await y.lookup(DIGEST)).toBeNull(); // X is not committed
    await commitCrawl(redis.client, "X");
    expect(await y.lookup(DIGEST)).toEqual({ ...entry, crawlId: "X", waczFilename: "x.wacz", waczFinished: false });
    expect(await redis.client.hget("allhashes", DIGEST)).toBe("X");
  });

  it("commits idempotently: twice, or after a crash halfway, counts once", async () => {
    const x = new DedupeIndex(redis.client, "X");
    await x.registerCrawl();
    for (let i = 0; i < 12_000; i++) await redis.client.hset("h:X", `sha256:${i}`, `0 20260102030405 http://a.test/${i} 10`);
    await x.addCounts({ totalUrls: 12_000, dupeUrls: 5, conservedSize: 700 });
    // A crash after merging some hashes but before the final step: allhashes partly filled, no counts.
    await redis.client.hset("allhashes", "sha256:1", "X");
    const first = await commitCrawl(redis.client, "X", 1000);
    const second = await commitCrawl(redis.client, "X", 1000);
    expect([first.committed, second.committed]).toEqual([true, false]);
    expect(await redis.client.hlen("allhashes")).toBe(12_000);
    expect(await redis.client.hgetall("allcounts")).toEqual({ totalUrls: "12000", dupeUrls: "5", conservedSize: "700" });
    expect(await redis.client.smembers("allcrawls")).toEqual(["X"]);
    expect(await redis.client.smembers("uncommittedcrawls")).toEqual([]);
  });

  it("first committed crawl keeps a hash in allhashes", async () => {
    await redis.client.hset("h:A", DIGEST, formatHashEntry(entry));
    await redis.client.hset("h:B", DIGEST, formatHashEntry({ ...entry, url: "http://b.test/" }));
    await commitCrawl(redis.client, "A");
    await commitCrawl(redis.client, "B");
    expect(await redis.client.hget("allhashes", DIGEST)).toBe("A");
  });

  it("cancel deletes the crawl's three keys and its uncommitted mark, and refuses a committed crawl", async () => {
    const x = new DedupeIndex(redis.client, "X");
    await x.registerCrawl();
    await x.registerWacz("x.wacz");
    await x.addOriginal(DIGEST, entry);
    await x.addCounts({ totalUrls: 1 });
    await cancelCrawl(redis.client, "X");
    expect(await redis.client.keys("*")).toEqual([]);
    await commitCrawl(redis.client, "Y");
    await expect(cancelCrawl(redis.client, "Y")).rejects.toThrow(/committed/);
  });

  it("registers a WACZ once, and completes it once (totalCrawlSize not double-counted)", async () => {
    const x = new DedupeIndex(redis.client, "X");
    expect(await x.registerWacz("a.wacz")).toBe(0);
    expect(await x.registerWacz("b.wacz")).toBe(1);
    expect(await x.registerWacz("a.wacz")).toBe(0);
    await x.finishWacz(0, { filename: "a.wacz", hash: "sha256:aa", size: 100 });
    await x.finishWacz(0, { filename: "a.wacz", hash: "sha256:aa", size: 100 });
    expect(await x.waczEntries()).toEqual([{ filename: "a.wacz", hash: "sha256:aa", size: 100 }, { filename: "b.wacz" }]);
    expect((await x.counts()).totalCrawlSize).toBe(100);
    // Repackaged after a resume: the entry is replaced and the size difference applied.
    await x.finishWacz(0, { filename: "a.wacz", hash: "sha256:bb", size: 150 });
    expect((await x.counts()).totalCrawlSize).toBe(150);
  });
});

describe("which original a revisit may point at", () => {
  it("within a crawl: another writer's WACZ only once it is packaged; this writer's own at once", async () => {
    const index = new DedupeIndex(redis.client, "X");
    const ownOf = (names: string[]) => async (filename: string) => names.includes(filename);
    const writerA = new Deduplicator(index, 0, ownOf(["a.wacz"]));
    const writerB = new Deduplicator(index, 0, ownOf(["b.wacz"]));
    const aIndex = await index.registerWacz("a.wacz");
    await writerA.noteResponse(DIGEST, { warcType: "response", url: entry.url, date: digitsToWarcDate(entry.date), length: 1234, wacz: { filename: "a.wacz", index: aIndex } }, true);
    // a.wacz is still being written: only writer A may point into it (it packages its files in order).
    expect(await writerA.findOriginal(DIGEST)).toMatchObject({ crawlId: "X", waczFilename: "a.wacz", waczFinished: false });
    expect(await writerB.findOriginal(DIGEST)).toBeNull();
    await index.finishWacz(aIndex, { filename: "a.wacz", hash: "sha256:" + "cd".repeat(32), size: 999 });
    // Packaged: its hash and size can be listed in relation.requires, so anyone may point into it.
    expect(await writerB.findOriginal(DIGEST)).toMatchObject({ crawlId: "X", waczFilename: "a.wacz", waczFinished: true });
  });
});
