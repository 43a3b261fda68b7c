// The indexer's hand-encoded batch commands (indexer/hashWriteBatch.ts) against a real redis-server:
// what lands in h:<crawlId> and allhashes is exactly what one HSET / HSETNX per entry would write,
// whatever bytes the digests and URLs hold, and a batch can be refilled and sent again.
import { describe, expect, it } from "vitest";
import { HashWriteBatch } from "../../../indexer/hashWriteBatch.js";
import { dedupeKeys, formatHashEntry, type HashEntry } from "../../../src/dedupe/indexKeys.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();


const entry = (url: string, size = 10): HashEntry => ({ waczIndex: 0, date: "20260101000000", url, size });

describe("HashWriteBatch", () => {
  it("writes every entry to h:<crawlId> (last wins) and each digest once to allhashes (first crawl wins)", async () => {
    const first = new HashWriteBatch(dedupeKeys.crawlHashes("a"), dedupeKeys.allHashes, "a");
    first.add("sha256:01", entry("https://example.com/one"));
    first.add("sha256:02", entry("https://example.com/two"));
    first.add("sha256:01", entry("https://example.com/one-again", 11));
    expect(first.lines).toBe(3);
    await first.send(redis.client);
    const second = new HashWriteBatch(dedupeKeys.crawlHashes("b"), dedupeKeys.allHashes, "b");
    second.add("sha256:02", entry("https://example.org/two"));
    second.add("sha256:03", entry("https://example.org/three"));
    await second.send(redis.client);

    expect(await redis.client.hgetall(dedupeKeys.crawlHashes("a"))).toEqual({
      "sha256:01": formatHashEntry(entry("https://example.com/one-again", 11)),
      "sha256:02": formatHashEntry(entry("https://example.com/two")),
    });
    expect(await redis.client.hgetall(dedupeKeys.crawlHashes("b"))).toEqual({
      "sha256:02": formatHashEntry(entry("https://example.org/two")),
      "sha256:03": formatHashEntry(entry("https://example.org/three")),
    });
    expect(await redis.client.hgetall(dedupeKeys.allHashes)).toEqual({ "sha256:01": "a", "sha256:02": "a", "sha256:03": "b" });
  });

  it("carries non-ASCII text, tabs, newlines and protocol-looking bytes exactly", async () => {
    const odd = [
      ["sha256:ünïcode\t\r\n$5\r\n", entry("https://example.com/ü/日本語?q=\t\n\r\n*3\r\n")],
      ["sha1:ABC", entry("https://example.com/\u{1f600} space")],
      ["sha256:plain", entry("https://example.com/plain")],
    ] as const;
    const batch = new HashWriteBatch(dedupeKeys.crawlHashes("x"), dedupeKeys.allHashes, "x");
    for (const [digest, e] of odd) batch.add(digest, e);
    await batch.send(redis.client);
    expect(await redis.client.hgetall(dedupeKeys.crawlHashes("x"))).toEqual(Object.fromEntries(odd.map(([d, e]) => [d, formatHashEntry(e)])));
    expect(await redis.client.hgetall(dedupeKeys.allHashes)).toEqual(Object.fromEntries(odd.map(([d]) => [d, "x"])));
  });

  it("is refilled after reset and grows past its first buffer", async () => {
    const batch = new HashWriteBatch(dedupeKeys.crawlHashes("x"), dedupeKeys.allHashes, "x");
    batch.add("sha256:gone", entry("https://example.com/gone"));
    batch.reset();
    const long = "https://example.com/" + "p".repeat(1000);
    for (let i = 0; i < 3000; i++) batch.add(`sha256:${i}`, entry(`${long}/${i}`));
    await batch.send(redis.client);
    expect(await redis.client.hlen(dedupeKeys.crawlHashes("x"))).toBe(3000);
    expect(await redis.client.hexists(dedupeKeys.crawlHashes("x"), "sha256:gone")).toBe(0);
    expect(await redis.client.hget(dedupeKeys.crawlHashes("x"), "sha256:2999")).toBe(formatHashEntry(entry(`${long}/2999`)));
    expect(await redis.client.hlen(dedupeKeys.allHashes)).toBe(3000);
  });
});
