// The compact frontier (issue 29 item 1) against a real redis-server: what a queued URL costs, what the
// queue keeps of each page, its host shards, a --saveState round trip, and an older build's frontier.
import { describe, expect, it } from "vitest";
import { measureFrontier, SMOKE } from "../../../bench/lib/frontierFigures.js";
import { Frontier, type QueuedPage } from "../../../src/frontier/frontier.js";
import { shardOf } from "../../../src/frontier/frontierEntry.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { loadCrawlState, serializeCrawlState } from "../../../src/frontier/savedState.js";
import { usePrivateRedis } from "../../helpers/redis.js";
import { seededRandom } from "../../helpers/seededRandom.js";

const redis = usePrivateRedis();

const stateOf = (crawlId: string, shards?: number) => new Frontier(redis.client, new Membership(redis.client, crawlId, "p1-aaaa"), 0, { shards });

async function drain(state: Frontier): Promise<QueuedPage[]> {
  const taken: QueuedPage[] = [];
  for (let page = await state.take(); page; page = await state.take()) {
    taken.push(page);
    await state.markDone(page.url);
  }
  return taken;
}

describe("frontier", () => {
  it("bench smoke: a page's 20,000 links cost Redis <= 120 bytes each and one round trip per 1000; a crawled page 3 round trips", async () => {
    const figures = await measureFrontier({ links: SMOKE.links, pages: SMOKE.pages, hosts: 1, cluster: false });
    expect(figures.queued).toBe(SMOKE.links);
    // The JSON zset and whole-URL seen set of before spent ~280 bytes, a round trip per link and 22 per page.
    expect(figures.bytesPerUrl).toBeGreaterThan(0);
    expect(figures.bytesPerUrl).toBeLessThanOrEqual(120);
    expect(figures.roundTripsPerQueuedLink).toBeLessThanOrEqual(0.002);
    expect(figures.roundTripsPerPage).toBe(3);
    expect(figures.commandsPerPage).toBeLessThan(60);
  }, 60_000);

  it("keeps each page's depth, seed and extra hops; each host's pages come in depth order from its shard; seen and the limit hold across shards", async () => {
    const random = seededRandom(29);
    const state = stateOf("sharded", 4);
    const hosts = ["a.test", "b.test", "c.test", "d.test", "e.test", "f.test"];
    expect(new Set(hosts.map((h) => shardOf(`http://${h}/`, 4))).size).toBeGreaterThan(1);
    const pages: QueuedPage[] = [];
    for (let i = 0; i < 60; i++) {
      const host = hosts[Math.floor(random() * hosts.length)]!;
      pages.push({ url: `http://${host}/p${i}?q=${i}`, depth: Math.floor(random() * 4), seedId: Math.floor(random() * 3), extraHops: Math.floor(random() * 2) });
    }
    expect(await state.enqueueMany(pages.slice(0, 50).map((page) => ({ page })), 50)).toEqual(pages.slice(0, 50).map(() => "queued"));
    expect(await state.enqueueMany(pages.slice(50).map((page) => ({ page })), 50)).toEqual(pages.slice(50).map(() => "limit"));
    // Again, with the same keys: all seen.
    expect(await state.enqueueMany(pages.slice(0, 50).map((page) => ({ page })), 0)).toEqual(pages.slice(0, 50).map(() => "seen"));
    expect(await state.counts()).toMatchObject({ queued: 50, seen: 50, pending: 0 });
    const taken = await drain(state);
    expect(taken.map((p) => p.url).sort()).toEqual(pages.slice(0, 50).map((p) => p.url).sort());
    for (const page of taken) expect(page).toEqual(pages.find((p) => p.url === page.url));
    for (const host of hosts) {
      const ofHost = taken.filter((p) => new URL(p.url).host === host);
      const expected = pages.slice(0, 50).filter((p) => new URL(p.url).host === host);
      // Depth-major, insertion order within a depth (a stable sort of the pages as queued).
      expect(ofHost.map((p) => p.url)).toEqual([...expected].sort((x, y) => x.depth - y.depth).map((p) => p.url));
    }
    expect(await state.counts()).toMatchObject({ queued: 0, done: 50, seen: 50 });
  });

  it("a --saveState file round-trips: queued (in order, with retries), pending, failed and finished pages come back in another crawl", async () => {
    const state = stateOf("saved");
    const page = (n: number, depth = 1): QueuedPage => ({ url: `http://a.test/${n}`, depth, seedId: n % 2, extraHops: n % 3 === 0 ? 1 : 0 });
    for (const n of [1, 2, 3, 4, 5, 6]) await state.enqueue(page(n, n === 1 ? 0 : 1), 0);
    expect((await state.take())?.url).toBe("http://a.test/1");
    await state.markDone("http://a.test/1");
    expect((await state.take())?.url).toBe("http://a.test/2");
    expect(await state.markFailed("http://a.test/2", "boom", 0)).toBe("failed");
    expect((await state.take())?.url).toBe("http://a.test/3");
    expect(await state.markFailed("http://a.test/3", "boom", 5)).toBe("retry");
    expect((await state.take())?.url).toBe("http://a.test/4");
    const keyOf = (url: string) => url;
    const saved = await serializeCrawlState(state, redis.client, state.keys, "saved", keyOf);
    expect(saved.finished).toEqual(["http://a.test/1"]);
    expect(saved.queued.map((j) => JSON.parse(j))).toEqual([
      { url: "http://a.test/5", seedId: 1, depth: 1, extraHops: 0 }, { url: "http://a.test/6", seedId: 0, depth: 1, extraHops: 1 },
      { url: "http://a.test/3", seedId: 1, depth: 1, extraHops: 1, retry: 1 },
    ]);
    expect(saved.pending.map((j) => JSON.parse(j))).toEqual([{ url: "http://a.test/4", seedId: 0, depth: 1, extraHops: 0 }]);
    expect(saved.failed.map((j) => JSON.parse(j))).toEqual([{ url: "http://a.test/2", seedId: 0, depth: 1, extraHops: 0, retry: 0 }]);

    const resumed = stateOf("resumed");
    const loaded = await loadCrawlState(resumed, redis.client, resumed.keys, saved, { maxRetries: 2, keyOf, inScope: () => true, processId: "p1", loaderGone: async () => true });
    expect(loaded).toEqual({ loaded: true, finished: 1, queued: 5, failed: 0 });
    // The failed page had retries left under the new --maxPageRetries: queued again.
    expect((await drain(resumed)).map((p) => p.url)).toEqual(["http://a.test/5", "http://a.test/6", "http://a.test/3", "http://a.test/4", "http://a.test/2"]);
    expect(await resumed.failedAttemptsOf("http://a.test/3")).toBe(1);
    for (const n of [1, 2, 3, 4, 5, 6]) expect(await resumed.enqueue(page(n), 0), String(n)).toBe("seen");
    expect((await resumed.counts()).seen).toBe(6);
  });

  it("an older build's frontier (the q zset of JSON, the s set of keys) is moved into the shards when the crawl resumes", async () => {
    const c = redis.client;
    const json = (url: string, depth: number) => JSON.stringify({ url, depth, seedId: 0, extraHops: 0 });
    // As 1c972ee left it: two queued pages (depth-major scores), one leased, one crawled, one failed, one retry waiting.
    await c.zadd("old:q", 1e12 + 5, json("http://a.test/b", 1), 1e12 + 3, json("http://a.test/a", 1), 2e12 + 1, json("http://a.test/deep", 2));
    await c.hset("old:p", "http://a.test/leased", json("http://a.test/leased", 1));
    await c.hset("old:lease", "http://a.test/leased", "gone-1234");
    await c.zadd("old:qdelay", 0, json("http://a.test/retry", 1));
    await c.hset("old:retries", "http://a.test/retry", 1);
    await c.sadd("old:s", "http://a.test/", "http://a.test/a", "http://a.test/b", "http://a.test/deep", "http://a.test/leased", "http://a.test/retry", "http://a.test/bad");
    await c.sadd("old:d", "http://a.test/");
    await c.hset("old:listed", "http://a.test/", "old-0.wacz");
    await c.rpush("old:f", JSON.stringify({ url: "http://a.test/bad", depth: 1, reason: "boom", attempts: 3 }));
    await c.set("old:attemptsFailed", 4);
    const state = stateOf("old");
    expect(await state.counts()).toEqual({ queued: 5, pending: 0, done: 1, failed: 1, seen: 7, failedAttempts: 4, skippedRobots: 0, rateLimited: 0, blocked: 0 });
    expect(await state.enqueue({ url: "http://a.test/a", depth: 1, seedId: 0, extraHops: 0 }, 0)).toBe("seen");
    expect(await state.listedIn(["http://a.test/"])).toEqual(["old-0.wacz"]);
    expect((await drain(state)).map((p) => p.url)).toEqual(["http://a.test/a", "http://a.test/b", "http://a.test/leased", "http://a.test/retry", "http://a.test/deep"]);
    expect(await state.failedAttemptsOf("http://a.test/retry")).toBe(1);
    expect(await state.failedPages()).toEqual([{ url: "http://a.test/bad", depth: 1, reason: "boom", attempts: 3 }]);
    expect(await c.exists("old:q", "old:s", "old:p", "old:lease", "old:qdelay", "old:d", "old:f")).toBe(0);
  });
});
