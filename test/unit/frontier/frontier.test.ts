import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Frontier } from "../../../src/frontier/frontier.js";
import { ExchangeClaims } from "../../../src/state/exchangeClaims.js";
import { ExtraSeeds } from "../../../src/frontier/extraSeeds.js";
import { HostPacing } from "../../../src/politeness/hostPacing.js";
import { FencedError, Liveness } from "../../../src/state/membership/fencing.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await redis.stop();
});

describe("crawl state in Redis", () => {
  it("queues each URL once, breadth first, honours the page limit", async () => {
    const state = new Frontier(redis.client, new Membership(redis.client, "c1", "p1"));
    expect(await state.enqueue({ url: "http://a.test/", depth: 0, seedId: 0, extraHops: 0 }, 3)).toBe("queued");
    expect(await state.enqueue({ url: "http://a.test/", depth: 0, seedId: 0, extraHops: 0 }, 3)).toBe("seen");
    expect(await state.enqueue({ url: "http://a.test/deep", depth: 2, seedId: 0, extraHops: 0 }, 3)).toBe("queued");
    expect(await state.enqueue({ url: "http://a.test/shallow", depth: 1, seedId: 0, extraHops: 0 }, 3)).toBe("queued");
    expect(await state.enqueue({ url: "http://a.test/over", depth: 1, seedId: 0, extraHops: 0 }, 3)).toBe("limit");
    const order: string[] = [];
    for (let page = await state.take(); page; page = await state.take()) {
      order.push(page.url);
      await state.markDone(page.url);
    }
    expect(order).toEqual(["http://a.test/", "http://a.test/shallow", "http://a.test/deep"]);
    expect(await state.counts()).toEqual({ queued: 0, pending: 0, done: 3, failed: 0, seen: 3, failedAttempts: 0, skippedRobots: 0, rateLimited: 0, blocked: 0 });
  });

  it("keys are prefixed by crawl id: another crawl sees nothing of the first", async () => {
    const other = new Frontier(redis.client, new Membership(redis.client, "c2", "p1"));
    expect(await other.enqueue({ url: "http://a.test/", depth: 0, seedId: 0, extraHops: 0 }, 0)).toBe("queued");
    const keys = await redis.client.keys("*");
    expect(keys.every((k) => k.startsWith("c1:") || k.startsWith("c2:"))).toBe(true);
  });

  it("says which pages a link would still queue, across shards, without queueing them; none once the page limit is reached", async () => {
    const state = new Frontier(redis.client, new Membership(redis.client, "c-would", "p1"), undefined, { shards: 4 });
    const urls = ["http://a.test/1", "http://b.test/1", "http://c.test/1", "http://d.test/1", "http://e.test/1"];
    for (const url of urls.slice(0, 3)) await state.enqueue({ url, depth: 0, seedId: 0, extraHops: 0 }, 5);
    expect(new Set((await state.shards()).map((_, n) => n)).size).toBe(4);
    const asked = [...urls, "http://a.test/2"].map((url) => ({ url, key: url }));
    expect(await state.wouldQueue(asked, 0)).toEqual([false, false, false, true, true, true]);
    // Asking queued nothing: still 3 queued, and the unseen ones queue as before.
    expect((await state.counts()).queued).toBe(3);
    expect(await state.wouldQueue(asked, 4)).toEqual([false, false, false, true, true, true]);
    expect(await state.enqueue({ url: "http://d.test/1", depth: 1, seedId: 0, extraHops: 0 }, 4)).toBe("queued");
    expect(await state.wouldQueue(asked, 4)).toEqual(asked.map(() => false));
    expect(await state.wouldQueue([], 4)).toEqual([]);
  });

  it("a page key this process saw queued is not asked about again; one queued by another process is asked and found", async () => {
    const membership = new Membership(redis.client, "c-known", "p1");
    const state = new Frontier(redis.client, membership);
    const other = new Frontier(redis.client, new Membership(redis.client, "c-known", "p2"));
    const page = (url: string) => ({ page: { url, depth: 1, seedId: 0, extraHops: 0 } });
    const evals = async () => [...(await redis.client.info("commandstats")).matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(await state.enqueueMany([page("http://a.test/menu"), page("http://a.test/about")], 0)).toEqual(["queued", "queued"]);
    let before = await evals();
    expect(await state.enqueueMany([page("http://a.test/menu"), page("http://a.test/about")], 0)).toEqual(["seen", "seen"]);
    expect(await state.wouldQueue([{ url: "http://a.test/menu", key: "http://a.test/menu" }], 0)).toEqual([false]);
    expect(await evals()).toBe(before);
    // Queued by another process: this one asks, and remembers.
    await other.enqueue({ url: "http://a.test/news", depth: 1, seedId: 0, extraHops: 0 }, 0);
    expect(await state.enqueueMany([page("http://a.test/news"), page("http://a.test/menu")], 0)).toEqual(["seen", "seen"]);
    before = await evals();
    expect(await state.enqueueMany([page("http://a.test/news")], 0)).toEqual(["seen"]);
    expect(await evals()).toBe(before);
    // A key asked twice in one probe is not taken for seen: it still queues.
    const twice = { url: "http://a.test/new", key: "http://a.test/new" };
    expect(await state.wouldQueue([twice, twice], 0)).toEqual([true, false]);
    expect(await state.enqueue({ url: "http://a.test/new", depth: 1, seedId: 0, extraHops: 0 }, 0)).toBe("queued");
    expect((await state.counts()).seen).toBe(4);
  });

  it("retries a failed page after a doubling backoff, then records it as failed; attempts are counted", async () => {
    const state = new Frontier(redis.client, new Membership(redis.client, "c3", "p1"), 300);
    await state.enqueue({ url: "http://a.test/bad", depth: 0, seedId: 0, extraHops: 0 }, 0);
    await state.enqueue({ url: "http://a.test/good", depth: 1, seedId: 0, extraHops: 0 }, 0);
    expect((await state.take())?.url).toBe("http://a.test/bad");
    expect(await state.markFailed("http://a.test/bad", "boom", 2)).toBe("retry");
    // Waiting out its backoff, the retry is still counted as queued, but the next page goes first.
    expect(await state.counts()).toMatchObject({ queued: 2, pending: 0, failed: 0, failedAttempts: 1 });
    const due = await state.nextRetryDueInMs();
    expect(due).toBeGreaterThan(200);
    expect(due).toBeLessThanOrEqual(300);
    expect((await state.take())?.url).toBe("http://a.test/good");
    await state.markDone("http://a.test/good");
    expect(await state.take()).toBeNull();
    await new Promise((r) => setTimeout(r, 320));
    expect((await state.take())?.url).toBe("http://a.test/bad");
    expect(await state.markFailed("http://a.test/bad", "boom", 2)).toBe("retry");
    // Second retry: twice the wait.
    expect(await state.nextRetryDueInMs()).toBeGreaterThan(500);
    await new Promise((r) => setTimeout(r, 620));
    expect((await state.take())?.url).toBe("http://a.test/bad");
    expect(await state.markFailed("http://a.test/bad", "boom", 2)).toBe("failed");
    expect(await state.failedPages()).toEqual([{ url: "http://a.test/bad", depth: 0, seedId: 0, extraHops: 0, reason: "boom", attempts: 3 }]);
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 0, done: 1, failed: 1, failedAttempts: 3 });
    expect(await state.nextRetryDueInMs()).toBeNull();
  });

  it("a page leased by this live process that no worker is loading is put back", async () => {
    const state = new Frontier(redis.client, new Membership(redis.client, "c6", "p1"), 0);
    await state.enqueue({ url: "http://a.test/1", depth: 0, seedId: 0, extraHops: 0 }, 0);
    await state.enqueue({ url: "http://a.test/2", depth: 0, seedId: 0, extraHops: 0 }, 0);
    await state.take();
    await state.take();
    // Only /2 is being loaded; /1's attempt ended without settling its lease.
    expect(await state.recoverOwnOrphans(new Set(["http://a.test/2"]), 2)).toEqual(["http://a.test/1"]);
    expect((await state.take())?.url).toBe("http://a.test/1");
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 2, failedAttempts: 1 });
  });

  it("pages leased by a dead process go back to the queue; a live process keeps its leases", async () => {
    const deadMember = new Membership(redis.client, "c4", "dead", 100);
    const aliveMember = new Membership(redis.client, "c4", "alive", 10_000);
    const dead = new Frontier(redis.client, deadMember);
    const alive = new Frontier(redis.client, aliveMember, 0);
    await dead.enqueue({ url: "http://a.test/1", depth: 0, seedId: 0, extraHops: 0 }, 0);
    await dead.enqueue({ url: "http://a.test/2", depth: 0, seedId: 0, extraHops: 0 }, 0);
    await deadMember.heartbeat();
    await aliveMember.heartbeat();
    expect((await dead.take())?.url).toBe("http://a.test/1");
    expect((await alive.take())?.url).toBe("http://a.test/2");
    expect(await alive.recoverAbandoned(2)).toEqual([]);
    await new Promise((r) => setTimeout(r, 200));
    expect(await alive.recoverAbandoned(2)).toEqual(["http://a.test/1"]);
    expect((await alive.take())?.url).toBe("http://a.test/1");
    // The dead process's late completion is ignored: the lease is no longer its own.
    await dead.markDone("http://a.test/1");
    expect((await alive.counts()).done).toBe(0);
  });

  it("a page is queued once per key, under the URL seen first; an alias key is seen without taking a place under the limit", async () => {
    const state = new Frontier(redis.client, new Membership(redis.client, "c-key", "p1"));
    const page = (url: string) => ({ url, depth: 1, seedId: 0, extraHops: 0 });
    expect(await state.enqueue(page("http://a.test/p?b=2&a=1"), 2, "http://a.test/p?a=1&b=2")).toBe("queued");
    expect(await state.enqueue(page("http://a.test/p?a=1&b=2"), 2, "http://a.test/p?a=1&b=2")).toBe("seen");
    await state.addSeenAlias("http://www.a.test/");
    expect(await state.enqueue(page("http://www.a.test/"), 2)).toBe("seen");
    expect(await state.enqueue(page("http://a.test/other"), 2)).toBe("queued");
    expect((await state.take())?.url).toBe("http://a.test/p?b=2&a=1");
    expect(await state.counts()).toMatchObject({ seen: 2, queued: 1, pending: 1 });
  });

  it("a rate-limited page waits out the server's delay (capped), counts no failed attempt, and fails once its rate-limit retries are used up", async () => {
    const state = new Frontier(redis.client, new Membership(redis.client, "c-rate", "p1"));
    const url = "http://a.test/busy";
    await state.enqueue({ url, depth: 0, seedId: 0, extraHops: 0 }, 0);
    const limits = { maxRetries: 2, backoffBaseMs: 100, capMs: 400 };
    await state.take();
    expect(await state.markRateLimited(url, 250, limits, "rate limited")).toEqual({ outcome: "retry", delayMs: 250 });
    expect(await state.nextRetryDueInMs()).toBeGreaterThan(150);
    expect(await state.take()).toBeNull();
    await new Promise((r) => setTimeout(r, 270));
    expect((await state.take())?.url).toBe(url);
    // No Retry-After: the backoff doubles per answer (100, 200, ...), never past the cap; a long Retry-After is capped too.
    expect(await state.markRateLimited(url, null, limits, "rate limited")).toEqual({ outcome: "retry", delayMs: 200 });
    await new Promise((r) => setTimeout(r, 220));
    expect((await state.take())?.url).toBe(url);
    expect(await state.markRateLimited(url, 60_000, limits, "rate limited: HTTP 429")).toEqual({ outcome: "failed", delayMs: 400 });
    expect(await state.counts()).toMatchObject({ queued: 0, pending: 0, failed: 1, failedAttempts: 0, rateLimited: 3, done: 0 });
    expect(await state.failedPages()).toEqual([{ url, depth: 0, seedId: 0, extraHops: 0, reason: "rate limited: HTTP 429", attempts: 3 }]);
  });

  it("a deferred page goes back due later, with no attempt counted", async () => {
    const state = new Frontier(redis.client, new Membership(redis.client, "c-defer", "p1"));
    await state.enqueue({ url: "http://a.test/later", depth: 0, seedId: 0, extraHops: 0 }, 0);
    await state.take();
    await state.defer("http://a.test/later", 300);
    expect(await state.take()).toBeNull();
    expect(await state.counts()).toMatchObject({ queued: 1, pending: 0, failedAttempts: 0 });
    await new Promise((r) => setTimeout(r, 320));
    expect((await state.take())?.url).toBe("http://a.test/later");
  });

  it("a backed-off host gets no turn until its delay has passed, in any process; a shorter back-off never shortens it", async () => {
    const membership = new Membership(redis.client, "c-host", "p1");
    const one = new HostPacing(redis.client, membership.keys);
    const other = new HostPacing(redis.client, membership.keys);
    expect(await one.turn("a.test", 0)).toBe(0);
    await one.backOff("a.test", 500);
    expect(await other.backOff("a.test", 100)).toBeGreaterThan(300);
    const wait = await other.turn("a.test", 0);
    expect(wait).toBeGreaterThan(300);
    expect(wait).toBeLessThanOrEqual(500);
    await new Promise((r) => setTimeout(r, wait + 20));
    expect(await other.turn("a.test", 0)).toBe(0);
  });

  it("extra seeds: one index per URL, the same for every process", async () => {
    const keys = new Membership(redis.client, "c-seeds", "p1").keys;
    const a = new ExtraSeeds(redis.client, keys);
    const b = new ExtraSeeds(redis.client, keys);
    expect(await a.add({ origSeedId: 0, url: "http://b.test/" })).toBe(0);
    expect(await b.add({ origSeedId: 1, url: "http://c.test/" })).toBe(1);
    expect(await b.add({ origSeedId: 0, url: "http://b.test/" })).toBe(0);
    expect(await a.list(1)).toEqual([{ origSeedId: 1, url: "http://c.test/" }]);
  });

  it("claims an exchange once per status and URL", async () => {
    const claims = new ExchangeClaims(redis.client, new Membership(redis.client, "c5", "p1"));
    expect(await claims.claim({ status: 200, method: "GET", url: "http://a.test/x" })).toEqual({ claimed: true });
    expect(await claims.claim({ status: 200, method: "GET", url: "http://a.test/x" })).toEqual({ claimed: false, storedIn: null, pending: true });
    expect(await claims.claim({ status: 404, method: "GET", url: "http://a.test/x" })).toEqual({ claimed: true });
    // Once stored, a claim says which WACZ holds the exchange.
    await claims.confirm({ status: 200, method: "GET", url: "http://a.test/x" }, "c5.wacz");
    expect(await claims.claim({ status: 200, method: "GET", url: "http://a.test/x" })).toEqual({ claimed: false, storedIn: "c5.wacz" });
    expect(await claims.isStored({ status: 200, method: "GET", url: "http://a.test/x" })).toBe(true);
  });
});

describe("fencing: a process taken for dead never acts again", () => {
  it("a stalled process's page, claim and writes are taken over; when it wakes it learns it is fenced", async () => {
    const memberA = new Membership(redis.client, "f1", "A", 600);
    const memberB = new Membership(redis.client, "f1", "B", 600);
    const a = new Frontier(redis.client, memberA);
    const b = new Frontier(redis.client, memberB, 0);
    const claimsA = new ExchangeClaims(redis.client, memberA);
    const claimsB = new ExchangeClaims(redis.client, memberB);
    const fencedMessages: string[] = [];
    // A renews once, then "stalls": no renewal until we say so.
    const livenessA = new Liveness(memberA, (m) => fencedMessages.push(m), 3_600_000);
    await livenessA.start();
    await new Liveness(memberB, () => undefined).start();
    await a.enqueue({ url: "http://a.test/1", depth: 0, seedId: 0, extraHops: 0 }, 0);
    expect((await a.take())?.url).toBe("http://a.test/1");
    expect(await claimsA.claim({ status: 200, method: "GET", url: "http://a.test/img" })).toEqual({ claimed: true });
    await livenessA.assertLive(); // just renewed: A may write

    await new Promise((r) => setTimeout(r, 700)); // A's heartbeat expires
    let writeAllowed: "waiting" | "allowed" | "refused" = "waiting";
    const pendingWrite = livenessA.assertLive().then(() => (writeAllowed = "allowed"), (err: unknown) => {
      writeAllowed = err instanceof FencedError ? "refused" : "waiting";
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(writeAllowed).toBe("waiting"); // past its heartbeat A writes nothing

    // B takes A for dead: its page goes back, its provisional claim is B's now.
    expect(await b.recoverAbandoned(2)).toEqual(["http://a.test/1"]);
    expect(await claimsB.claim({ status: 200, method: "GET", url: "http://a.test/img" })).toEqual({ claimed: true });
    expect(await redis.client.sismember("f1:fenced", "A")).toBe(1);

    // A wakes up: its late steps change nothing, and it cannot come back.
    await claimsA.confirm({ status: 200, method: "GET", url: "http://a.test/img" }, "f1.wacz");
    expect(await redis.client.hget("f1:exch", "200 GET http://a.test/img")).toBe("B");
    await a.markDone("http://a.test/1");
    expect((await b.counts()).done).toBe(0);
    expect(await memberA.heartbeat()).toBe("fenced");
    await livenessA.renewNow();
    await pendingWrite;
    expect(writeAllowed).toBe("refused");
    expect(fencedMessages).toHaveLength(1);
    expect(fencedMessages[0]).toMatch(/taken for dead/);
    livenessA.stop();
  });

  it("a process alive by its heartbeat cannot be fenced", async () => {
    const a = new Membership(redis.client, "f2", "A", 10_000);
    const b = new Membership(redis.client, "f2", "B", 10_000);
    await a.heartbeat();
    expect(await b.fenceIfDead("A")).toBe(false);
    expect(await a.heartbeat()).toBe("renewed");
  });
});
