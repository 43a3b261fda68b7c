// The sharded layout's compact fields and values (dedupe/indexKeys.ts): every digest and hash entry reads back
// exactly as written, and an index written in another format is refused in one line.
import { describe, expect, it } from "vitest";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import {
  compactHashEntry,
  digestField,
  digestOfField,
  expandHashEntry,
  LAYOUT_KEY,
  sha256FieldLength,
  shardKeys,
  shardOfDigest,
} from "../../../src/dedupe/indexKeys.js";
import { createShardedLayout, loadLayout } from "../../../src/dedupe/indexLayout.js";
import { readShardedHash, rollbackWaczSharded, writeEntriesSharded } from "../../../src/dedupe/shardedHashes.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const SHA = "sha256:" + "0123456789abcdef".repeat(4);

describe("digest fields", () => {
  it("store a sha256 digest as its raw bytes less the whole bytes its shard names", () => {
    expect(digestField(SHA, 4).toString("hex")).toBe("0123456789abcdef".repeat(4).slice(4));
    expect(digestField(SHA, 3).toString("hex")).toBe("0123456789abcdef".repeat(4).slice(2));
    expect(digestField(SHA, 1)).toHaveLength(32);
    expect(digestOfField(digestField(SHA, 4), "0123".slice(0, 4))).toBe(SHA);
    expect(digestOfField(digestField(SHA, 3), "012")).toBe(SHA);
  });

  it("round-trip every digest, sha256 or text of any length near the raw field's, for every shard count", () => {
    for (let prefixDigits = 1; prefixDigits <= 6; prefixDigits++) {
      const raw = sha256FieldLength(prefixDigits);
      const digests = [SHA, "sha256:" + "ff".repeat(32), "sha256:" + "00".repeat(32), "sha256:" + "AB".repeat(32)];
      for (let length = 1; length <= 40; length++) {
        digests.push("x".repeat(length), "y".repeat(length - 1) + " ", "é".repeat(Math.floor(length / 2)) + "z".repeat(length % 2));
      }
      digests.push(" ".repeat(raw), "sha1:" + "A".repeat(raw - 5), "sha1:" + "B".repeat(raw - 4), "sha1:" + "C".repeat(raw - 6));
      const fields = new Set<string>();
      for (const digest of digests) {
        const shard = shardOfDigest(digest, prefixDigits);
        const field = digestField(digest, prefixDigits);
        expect(digestOfField(field, shard), `${prefixDigits} ${JSON.stringify(digest)}`).toBe(digest);
        // Only a sha256 digest has a field of the raw length.
        expect(field.length === raw, JSON.stringify(digest)).toBe(/^sha256:[0-9a-f]{64}$/.test(digest));
        fields.add(`${shard}/${field.toString("hex")}`);
      }
      expect(fields.size).toBe(new Set(digests).size);
    }
  });
});

describe("compact hash entries", () => {
  it("shorten the date, the scheme and the size, keeping the WACZ index first in decimal", () => {
    expect(compactHashEntry("0 20260102030405678 https://example.com/x.png 2000")).toBe("0 xmjwaidke example.com/x.png 1jk");
    expect((1767323045678).toString(36)).toBe("mjwaidke"); // 2026-01-02T03:04:05.678Z in ms
    expect(compactHashEntry("3 20260102030405 http://a.test/a b  c 99")).toBe("3 kt87v6t a.test/a b  c 2r");
    expect(compactHashEntry("12 19700101000000 urn:x 0")).toBe("12 a0 urn:x 0");
  });

  it("read back exactly as written: fraction digits 0 to 9, any URL, any size", () => {
    const values = [
      "0 20260102030405 https://example.com/ 1",
      "0 202601020304051 http://example.com/ 1",
      "0 20260102030405678 https://example.com/a b  c.png 2000",
      "0 20260102030405007 https://example.com/ 2000",
      "0 20260102030405000 https://example.com/ 2000",
      "0 20260102030405000000 https://example.com/ 2000",
      "0 20260102030405123456789 ftp://x 5",
      "0 20260102030405999999999 dns:example.com 0",
      "7 19700101000000 https:// 9007199254740991",
      "1 19991231235959123 HTTPS://EXAMPLE.COM/ 12345678",
      "4 20260102030405678 http:/one-slash 3",
      "123 20260102030405678 https://example.com/https://again 44",
      "0 20260102030405678  https://leading-space 1",
    ];
    for (const value of values) {
      const stored = compactHashEntry(value);
      expect(stored.length, value).toBeLessThan(value.length);
      expect(stored.startsWith(value.split(" ")[0] + " "), value).toBe(true);
      expect(expandHashEntry(stored), value).toBe(value);
    }
  });

  it("read back every second from 1970 to 9999 with every fraction length, the largest fractions too", () => {
    const starts = [0, 1, 86_399, 951_782_400, 1_767_323_045, 4_102_444_800, 9_007_199_254, 253_402_300_799];
    for (let i = 0; i < 3000; i++) starts.push(Math.floor(((i * 2_654_435_761) % 4_294_967_296) / 4_294_967_296 * 253_402_300_799));
    for (const [i, seconds] of starts.entries()) {
      const digits = new Date(seconds * 1000).toISOString().replace(/[-:TZ]/g, "").slice(0, 14);
      for (const fraction of ["", "0", "9", "000", "999", "123456", "999999", "0000001", "99999999", "999999999", String(i).padStart(9, "0")]) {
        const value = `${i % 3} ${digits}${fraction} https://x.test/${i} ${i}`;
        expect(expandHashEntry(compactHashEntry(value)), value).toBe(value);
      }
    }
  });

  it("keep a value whose date or numbers it cannot put so as given, and read it back as given", () => {
    const values = [
      "0 19691231235959 https://before-1970/ 1", // before the epoch
      "0 20161231235960 https://leap-second/ 1", // no such time
      "0 20261301000000 https://month-13/ 1",
      "0 202601020304051234567890 https://ten-fraction-digits/ 1",
      "01 20260102030405 https://not-canonical-index/ 1",
      "0 20260102030405 https://size-not-canonical/ 01",
      "0 20260102030405 https://size-not-a-number/ x",
      "0 2026010203040 https://thirteen-digits/ 1",
    ];
    for (const value of values) {
      expect(compactHashEntry(value), value).toBe(value);
      expect(expandHashEntry(value), value).toBe(value);
    }
    expect(expandHashEntry("garbage")).toBe("garbage");
  });
});

describe("a sharded index on one node", () => {
  const redis = usePrivateRedis();

  it("records its format and refuses another format in one line", async () => {
    await createShardedLayout(redis.client, 2);
    expect(JSON.parse((await redis.client.get(LAYOUT_KEY))!)).toEqual({ layout: "sharded", prefixDigits: 2, format: 2 });
    await redis.client.set(LAYOUT_KEY, JSON.stringify({ layout: "sharded", prefixDigits: 2 }));
    await expect(loadLayout(redis.client, false)).rejects.toThrow(
      '{dd}layout says this sharded dedupe index has format 1 (no format field), but this crawler reads format 2 only: rebuild the index from its WACZ files with the indexer into an empty Redis (see docs/user-guide/dedupe.md)',
    );
    await redis.client.set(LAYOUT_KEY, JSON.stringify({ layout: "sharded", prefixDigits: 2, format: 3 }));
    await expect(loadLayout(redis.client, true)).rejects.toThrow(/^\{dd\}layout says this sharded dedupe index has format 3, but this crawler reads format 2 only: /);
    await redis.client.set(LAYOUT_KEY, "not json");
    await expect(loadLayout(redis.client, false)).rejects.toThrow("{dd}layout holds an unknown dedupe layout: not json");
  });

  it("gives every caller the single-node values: batch write, lookup, live add, rollback", async () => {
    const layout = await createShardedLayout(redis.client, 3);
    if (layout.kind !== "sharded") throw new Error("not sharded");
    const entries = [
      { digest: SHA, value: "0 20260102030405678 https://a.test/x y.png 2000" },
      { digest: "sha1:" + "Q".repeat(32), value: "1 20260102030405 http://a.test/ 10" },
      { digest: "md5:" + "a".repeat(27), value: "1 19650102030405 https://old.test/ 7" },
    ];
    await writeEntriesSharded(redis.client, layout, "A", entries);
    const expected = Object.fromEntries(entries.map(({ digest, value }) => [digest, value]));
    expect(await readShardedHash(redis.client, layout, "A")).toEqual(expected);
    expect(await readShardedHash(redis.client, layout, null)).toEqual(Object.fromEntries(entries.map(({ digest }) => [digest, "A"])));
    // What is stored is the compact form, under the shortened field.
    const shard = shardOfDigest(SHA, 3);
    expect(await redis.client.hget(shardKeys.crawlHashes("A", shard), digestField(SHA, 3))).toBe("0 xmjwaidke a.test/x y.png 1jk");

    const other = new DedupeIndex(redis.client, "B");
    await other.registerCrawl();
    expect(await other.lookup(SHA)).toMatchObject({ crawlId: "A", waczIndex: 0, date: "20260102030405678", url: "https://a.test/x y.png", size: 2000 });
    expect(await other.lookup("sha1:" + "Q".repeat(32))).toMatchObject({ crawlId: "A", waczIndex: 1, date: "20260102030405", url: "http://a.test/", size: 10 });
    expect(await other.addOriginal("sha256:" + "cd".repeat(32), { waczIndex: 2, date: "20260102030405", url: "https://b.test/", size: 5 })).toBe(true);
    expect(await other.lookup("sha256:" + "cd".repeat(32))).toMatchObject({ crawlId: "B", waczIndex: 2, date: "20260102030405", url: "https://b.test/", size: 5 });

    // A second writer of the same digests: h:<crawl> takes them, allhashes keeps the first crawl.
    await writeEntriesSharded(redis.client, layout, "C", entries.slice(0, 1));
    expect((await readShardedHash(redis.client, layout, null))[SHA]).toBe("A");

    // Rollback matches the WACZ index at the start of the compact value.
    await rollbackWaczSharded(redis.client, layout, "A", 1);
    expect(await readShardedHash(redis.client, layout, "A")).toEqual({ [SHA]: entries[0]!.value });
    expect(await readShardedHash(redis.client, layout, null)).toEqual({ [SHA]: "A" });
  });
});
