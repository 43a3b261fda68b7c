// Two purges whose rebuilds of the merged index collide, in both layouts (the sharded one on one node): the
// first stops at the test pause after building allhashes aside, and its lease lapses there as a stalled
// process's would (the lease key is gone; its renewal finds nothing of its own to renew). A second purge
// then takes the lease over. Whether the second finishes first or is itself still rebuilding when the first
// wakes, the first is refused (LeaseLostError) and swaps nothing in; afterwards every committed crawl has
// each of its hashes in allhashes, and the purged crawls are gone.
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { mergeCrawlUrls } from "../../../src/dedupe/captureHistory.js";
import { commitCrawl, mergeCrawlHashes } from "../../../src/dedupe/commit.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { createShardedLayout, keysOf, loadLayout, type DedupeRedis } from "../../../src/dedupe/indexLayout.js";
import { MergeLease } from "../../../src/dedupe/mergeLease.js";
import { purgeCrawls } from "../../../src/dedupe/purge.js";
import { logger } from "../../../src/log/logger.js";
import { singleLayoutView } from "../../helpers/dedupeCluster.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();
const clients: DedupeRedis[] = [];
afterAll(() => clients.forEach((c) => c.disconnect()));
afterEach(() => {
  delete process.env.CRAWLER_TEST_PAUSE_AT;
  delete process.env.CRAWLER_TEST_PAUSE_MS;
  vi.restoreAllMocks();
});

/** A connection of its own, as another indexer process would have, with the index's layout loaded. */
async function connect(): Promise<DedupeRedis> {
  const client = new Redis(redis.url);
  clients.push(client);
  await loadLayout(client, false);
  return client;
}

const digest = (n: number) => "sha256:" + n.toString(16).padStart(64, "0");

async function writeCommittedCrawl(client: DedupeRedis, crawlId: string, from: number, count: number): Promise<void> {
  const index = new DedupeIndex(client, crawlId);
  await index.registerCrawl();
  await index.registerWacz(`${crawlId}.wacz`);
  await index.finishWacz(0, { filename: `${crawlId}.wacz`, hash: `sha256:${crawlId}`, size: 1000 });
  await Promise.all(Array.from({ length: count }, (_, i) =>
    index.addOriginal(digest(from + i), { waczIndex: 0, date: "20260102030405", url: `http://takeover.test/${from + i}`, size: 3000 })));
  await index.addCounts({ totalUrls: count, dupeUrls: 0, conservedSize: 0 });
  await commitCrawl(client, crawlId);
}

/** Resolves when this process's next purge reaches the test pause `point`. */
function reaching(point: string): Promise<void> {
  return new Promise((resolve) => {
    const info = logger.info.bind(logger);
    vi.spyOn(logger, "info").mockImplementation((context, message, details) => {
      info(context, message, details);
      if (message === `test pause at ${point}`) resolve();
    });
  });
}

/**
 * `secondPauses`: the second purge is still rebuilding (paused before its swap) when the first wakes;
 * otherwise it runs to its end while the first is stalled.
 */
async function collide(secondPauses: boolean): Promise<void> {
  const [first, second, view] = await Promise.all([connect(), connect(), connect()]);
  const kept = ["kept0", "kept1", "kept2", "kept3"];
  for (const [i, crawlId] of kept.entries()) await writeCommittedCrawl(view, crawlId, i * 300, 400);
  await writeCommittedCrawl(view, "gone1", 10_000, 200);
  await writeCommittedCrawl(view, "gone2", 20_000, 200);

  process.env.CRAWLER_TEST_PAUSE_AT = "purge-rebuilt-aside";
  process.env.CRAWLER_TEST_PAUSE_MS = "3000";
  const paused = reaching("purge-rebuilt-aside");
  const stalled = purgeCrawls(first, ["gone1"]).then(() => null, (err: unknown) => err);
  await paused;
  // The first holder stalls past its lease: the lease lapses, and nothing of the first may act again.
  await view.del(keysOf(view).mergeLease);
  if (!secondPauses) delete process.env.CRAWLER_TEST_PAUSE_AT;
  else process.env.CRAWLER_TEST_PAUSE_MS = "5000";
  await purgeCrawls(second, ["gone2"]);
  const refused = await stalled;

  const index = await singleLayoutView(view);
  expect((index["allcrawls"] as string[]).sort()).toEqual(kept);
  expect(index["purging"]).toBeUndefined();
  const allhashes = (index["allhashes"] ?? {}) as Record<string, string>;
  const missing: string[] = [];
  for (const crawlId of kept) {
    for (const hashDigest of Object.keys(index[`h:${crawlId}`] as Record<string, string>)) {
      if (!kept.includes(allhashes[hashDigest] ?? "")) missing.push(`${crawlId}: ${hashDigest}`);
    }
  }
  expect(missing.length, `hashes of committed crawls not in allhashes, e.g. ${missing.slice(0, 3).join(", ")}`).toBe(0);
  // kept0..kept3 hold payloads 0..1299 between them: each of those once, and nothing of the purged crawls.
  expect(Object.keys(allhashes).length).toBe(1300);
  expect(Number((index["allcounts"] as Record<string, string>)["totalUrls"])).toBe(1600);
  // The stalled rebuild was refused at its first fenced step (the swap) and said why.
  expect(refused).toBeInstanceOf(Error);
  expect((refused as Error).name).toBe("LeaseLostError");
  expect((refused as Error).message).toMatch(/lease was taken over by a newer holder/);
}

describe("two rebuilds whose merge leases collide", () => {
  for (const layout of ["single", "sharded"] as const) {
    it(`${layout} layout: the stalled rebuild swaps nothing once a newer one finished`, async () => {
      if (layout === "sharded") await createShardedLayout(redis.client, 2);
      await collide(false);
    }, 30_000);

    it(`${layout} layout: the stalled rebuild swaps nothing while a newer one is still rebuilding`, async () => {
      if (layout === "sharded") await createShardedLayout(redis.client, 2);
      await collide(true);
    }, 30_000);
  }
});

describe("a merge lease taken over", () => {
  for (const layout of ["single", "sharded"] as const) {
    it(`${layout} layout: its holder's writes aside are refused, the newer holder's are not`, async () => {
      if (layout === "sharded") await createShardedLayout(redis.client, 2);
      const [stale, fresh, view] = await Promise.all([connect(), connect(), connect()]);
      await writeCommittedCrawl(view, "kept0", 0, 50);
      const older = await MergeLease.acquire(stale);
      await view.del(keysOf(view).mergeLease); // lapsed: its holder stalled
      const newer = await MergeLease.acquire(fresh);
      try {
        await expect(mergeCrawlHashes(stale, "kept0", 5000, older)).rejects.toThrow(/FENCED epoch 1 < 2/);
        await expect(mergeCrawlUrls(stale, "kept0", older)).rejects.toThrow(/FENCED/);
        await expect(older.raiseEpoch()).rejects.toThrow(/FENCED/);
        expect(await view.get(keysOf(view).mergeEpoch)).toBe("2");
        await mergeCrawlHashes(fresh, "kept0", 5000, newer);
        const asideKeys = layout === "single" ? [keysOf(view).rebuildHashes] : await view.keys("{*}ah:rebuild");
        const aside = (await Promise.all(asideKeys.map((key) => view.hlen(key)))).reduce((sum, n) => sum + n, 0);
        expect(aside).toBe(50);
      } finally {
        await older.release();
        await newer.release();
      }
    });
  }
});
