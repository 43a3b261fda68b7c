// The import's order-independent rules (issue 28, item 6) against a real redis-server, in both layouts:
// whichever order (or interleaving) two crawls' batches are written in, allhashes names the crawl first in
// crawlorder, and h:<crawl> keeps the entry of the crawl's latest WACZ.
import { describe, expect, it } from "vitest";
import { HashWriteBatch } from "../../../indexer/hashWriteBatch.js";
import { CrawlRanks, rankCrawls } from "../../../src/dedupe/payloadOwnership.js";
import { dedupeKeys, formatHashEntry, type HashEntry } from "../../../src/dedupe/indexKeys.js";
import { createShardedLayout, layoutOf } from "../../../src/dedupe/indexLayout.js";
import { writeEntriesSharded } from "../../../src/dedupe/shardedHashes.js";
import { singleLayoutView } from "../../helpers/dedupeCluster.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();

const digest = (n: number) => "sha256:" + n.toString(16).padStart(64, "0");
const entry = (waczIndex: number, n: number): HashEntry => ({ waczIndex, date: "20260102030405", url: `http://order.test/${n}`, size: 100 + n });

/** One batch of a crawl's WACZ: its digests written by the import's rules, then the held ones claimed. */
async function importBatch(crawlId: string, waczIndex: number, digests: number[]): Promise<void> {
  const layout = layoutOf(redis.client);
  const held = layout.kind === "sharded"
    ? await writeEntriesSharded(redis.client, layout, crawlId, digests.map((n) => ({ digest: digest(n), value: formatHashEntry(entry(waczIndex, n)) })))
    : await (() => {
      const batch = new HashWriteBatch(dedupeKeys.crawlHashes(crawlId), dedupeKeys.allHashes, crawlId);
      for (const n of digests) batch.add(digest(n), entry(waczIndex, n));
      return batch.send(redis.client);
    })();
  await new CrawlRanks(redis.client).claim(crawlId, held);
}

// X's two WACZ files and Y's one share payloads 3-6; X precedes Y.
const BATCHES: [string, number, number[]][] = [["X", 0, [1, 2, 3, 4]], ["X", 1, [2, 5, 6]], ["Y", 0, [3, 4, 5, 6, 7]]];

describe("crawlorder", () => {
  it("ranks a manifest's crawls in its order, after the crawls ranked before that it does not list", async () => {
    await rankCrawls(redis.client, ["A"]);
    await rankCrawls(redis.client, ["B"]);
    expect(await redis.client.hgetall("crawlorder")).toEqual({ A: "1", B: "2" });
    await rankCrawls(redis.client, ["C", "B", "C"]);
    expect(await redis.client.hgetall("crawlorder")).toEqual({ A: "1", C: "2", B: "3" });
    await rankCrawls(redis.client, ["C", "B"]);
    expect(await redis.client.hgetall("crawlorder")).toEqual({ A: "1", C: "2", B: "3" });
  });

  for (const layout of ["single", "sharded"] as const) {
    it(`${layout} layout: every import order, one after another or all at once, writes the same index`, async () => {
      const orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
      const results = [];
      for (const order of orders) {
        for (const together of [false, true]) {
          results.push(await importInOrder(layout, order, together));
        }
      }
      const first = results[0]!;
      expect(first["allhashes"]).toEqual(Object.fromEntries([1, 2, 3, 4, 5, 6, 7].map((n) => [digest(n), n === 7 ? "Y" : "X"])));
      // h:X keeps WACZ 1's entry of payload 2, which both of its WACZ files hold.
      expect((first["h:X"] as Record<string, string>)[digest(2)]).toBe(formatHashEntry(entry(1, 2)));
      for (const [i, view] of results.entries()) expect(view, `order ${orders[Math.floor(i / 2)]!.join(",")}${i % 2 ? " at once" : ""}`).toEqual(first);
    });
  }
});

async function importInOrder(layout: "single" | "sharded", order: number[], together: boolean): Promise<Record<string, unknown>> {
  await redis.client.flushdb(); // our private test redis-server
  if (layout === "sharded") await createShardedLayout(redis.client, 2);
  await rankCrawls(redis.client, ["X", "Y"]);
  if (together) await Promise.all(order.map((i) => importBatch(...BATCHES[i]!)));
  else for (const i of order) await importBatch(...BATCHES[i]!);
  return singleLayoutView(redis.client);
}
