import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { stateOptions } from "../../../src/config/groups/stateOptions.js";
import { stateFileChunks } from "../../../src/config/stateFile.js";
import { writeWholeFile } from "../../../src/durable/wholeFile.js";
import { Frontier, type QueuedPage } from "../../../src/frontier/frontier.js";
import { shardOf, unpackEntry } from "../../../src/frontier/frontierEntry.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { loadCrawlState, serializeCrawlState, type SavedCrawlState } from "../../../src/frontier/savedState.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "saved-state-"));
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

const page = (url: string, depth = 1): QueuedPage => ({ url, depth, seedId: 0, extraHops: 0 });
const urlOf = (json: string) => (JSON.parse(json) as { url: string }).url;
const sorted = (list: string[]) => [...list].sort();

function crawl(crawlId: string, processId = "p1", shards = 1, client: Redis = redis.client): Frontier {
  return new Frontier(client, new Membership(client, crawlId, processId), 1000, { shards });
}

const loadOptions = { maxRetries: 2, keyOf: (url: string) => url, inScope: () => true, processId: "loader", loaderGone: async () => true };

/** The state a --config file gives the crawl, read as the crawl reads it (crawlFlags, then the state options). */
function stateFromFile(file: string): SavedCrawlState | null {
  return stateOptions(crawlFlags(buildCrawlProgram().exitOverride(), ["--config", file], "user")).resumeFrom;
}

describe("a state file of ours cut short", () => {
  it("cut at every byte of its finished list: loads whole (the exact sets) or is refused naming the file, never in part", async () => {
    await redis.client.flushdb();
    const source = crawl("cut-src");
    const finished = Array.from({ length: 12 }, (_, i) => `http://a.test/f${i}`);
    const queued = ["http://a.test/q1", "http://a.test/q2", "http://a.test/q3"];
    for (const url of [...finished, ...queued]) await source.enqueue(page(url), 0);
    for (let i = 0; i < finished.length; i++) await source.markDone((await source.take())!.url);
    const saved = await serializeCrawlState(source, redis.client, source.keys, "cut-src", (url) => url);
    expect(sorted(saved.finished)).toEqual(sorted(finished));
    const whole = join(dir, "whole.yaml");
    await writeWholeFile(whole, stateFileChunks({ url: ["http://a.test/"] }, saved));
    const text = readFileSync(whole);
    const from = text.indexOf("  finished:\n");
    const to = text.indexOf("  queued:", from);
    expect(from).toBeGreaterThan(0);
    let refused = 0;
    let whole_ = 0;
    const cut = join(dir, "cut.yaml");
    for (let at = from; at <= to; at++) {
      writeFileSync(cut, text.subarray(0, at));
      let state: SavedCrawlState | null;
      try {
        state = stateFromFile(cut);
      } catch (err) {
        expect((err as Error).message, `cut at ${at}`).toContain(cut);
        refused++;
        continue;
      }
      // Loaded: through the crawl's loader into a real Redis, every saved page is there again.
      await redis.client.flushdb();
      const target = crawl("cut-dst");
      await loadCrawlState(target, redis.client, target.keys, state!, loadOptions);
      const back = await serializeCrawlState(target, redis.client, target.keys, "cut-dst", (url) => url);
      expect(sorted(back.queued.map(urlOf)), `cut at ${at}`).toEqual(sorted(queued));
      for (const url of finished) expect(await target.enqueue(page(url), 0), `cut at ${at}: ${url}`).toBe("seen");
      whole_++;
    }
    expect(refused).toBe(to - from + 1);
    expect(whole_).toBe(0);
    // The whole file loads.
    expect(sorted(stateFromFile(whole)!.finished)).toEqual(sorted(finished));
  }, 120_000);
});

describe("loading a state into the collection's Redis", () => {
  it("keeps the pages crawled into the collection done and listed in their WACZ", async () => {
    await redis.client.flushdb();
    const state = crawl("keep");
    for (const url of ["http://a.test/1", "http://a.test/2", "http://a.test/3"]) await state.enqueue(page(url), 0);
    await state.markDone((await state.take())!.url, "first.wacz");
    await state.markDone((await state.take())!.url, "first.wacz");
    const saved = await serializeCrawlState(state, redis.client, state.keys, "keep", (url) => url);
    const result = await loadCrawlState(state, redis.client, state.keys, saved, loadOptions);
    expect(result).toMatchObject({ loaded: true, finished: 2, queued: 1 });
    expect(await state.listedIn(["http://a.test/1", "http://a.test/2", "http://a.test/3"])).toEqual(["first.wacz", "first.wacz", null]);
    expect((await state.counts()).done).toBe(2);
  });

  it("a load whose process was cut off midway (its frontier emptied, nothing loaded yet) is loaded whole by the next one", async () => {
    await redis.client.flushdb();
    const source = crawl("midway-src");
    const urls = Array.from({ length: 50 }, (_, i) => `http://a.test/${i}`);
    for (const url of urls) await source.enqueue(page(url), 0);
    const saved = await serializeCrawlState(source, redis.client, source.keys, "midway-src", (url) => url);
    // The first loader stops at the test pause (after emptying the frontier); its connection is then cut, as a kill would.
    const doomed = new Redis(redis.url);
    doomed.on("error", () => {});
    process.env.CRAWLER_TEST_PAUSE_AT = "state-load";
    process.env.CRAWLER_TEST_PAUSE_MS = "1500";
    const first = crawl("midway", "first", 1, doomed);
    const cutOff = loadCrawlState(first, doomed, first.keys, saved, { ...loadOptions, processId: "first" }).catch((err: unknown) => err);
    while (!(await redis.client.get(first.keys.stateLoaded))) await new Promise((r) => setTimeout(r, 20));
    doomed.disconnect();
    delete process.env.CRAWLER_TEST_PAUSE_AT;
    expect(await cutOff).toBeInstanceOf(Error);
    const second = crawl("midway", "second");
    const result = await loadCrawlState(second, redis.client, second.keys, saved, { ...loadOptions, processId: "second", loaderGone: async (p) => p === "first" });
    expect(result).toMatchObject({ loaded: true, queued: 50 });
    const back = await serializeCrawlState(second, redis.client, second.keys, "midway", (url) => url);
    expect(sorted(back.queued.map(urlOf))).toEqual(sorted(urls));
  });

  it("a load claimed by a process that died is loaded again; one whose loader finished is not", async () => {
    await redis.client.flushdb();
    const state = crawl("claim");
    await state.enqueue(page("http://a.test/1"), 0);
    const saved = await serializeCrawlState(state, redis.client, state.keys, "claim", (url) => url);
    await redis.client.set(state.keys.stateLoaded, "loading somedigest dead-process");
    expect((await loadCrawlState(state, redis.client, state.keys, saved, { ...loadOptions, loaderGone: async (p) => p === "dead-process" })).loaded).toBe(true);
    expect((await loadCrawlState(state, redis.client, state.keys, saved, loadOptions)).loaded).toBe(false);
  });
});

/** Two hosts, one in each of two shards. */
function hostsOfShards(): [string, string] {
  const hosts = Array.from({ length: 50 }, (_, i) => `http://h${i}.test`);
  return [hosts.find((h) => shardOf(`${h}/`, 2) === 0)!, hosts.find((h) => shardOf(`${h}/`, 2) === 1)!];
}

/** A client that runs `between` once, right after the snapshot read its first queue list of `listPrefix`. */
function interrupted(client: Redis, listPrefix: string, between: () => Promise<void>): Redis {
  let done = false;
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== "lrange" || typeof value !== "function") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: [string, number, number]) => {
        const result = await (value as (...a: unknown[]) => Promise<string[]>).apply(target, args);
        if (!done && args[0].startsWith(listPrefix)) {
          done = true;
          await between();
        }
        return result;
      };
    },
  });
}

describe("a --saveState snapshot while workers go on", () => {
  it("keeps a link queued into a shard already read by a page that then finished (the page is saved to be crawled again)", async () => {
    await redis.client.flushdb();
    const [a, b] = hostsOfShards();
    const reader = crawl("snap", "reader", 2);
    const worker = crawl("snap", "worker", 2);
    // The worker leases b/p (shard 1); a/q1 waits in shard 0.
    await worker.enqueue(page(`${b}/p`), 0);
    expect((await worker.take())?.url).toBe(`${b}/p`);
    await worker.enqueue(page(`${a}/q1`), 0);
    const shards = await reader.shards();
    const client = interrupted(redis.client, shards[0]!.queueAtDepth, async () => {
      // Shard 0 was just read: b/p queues a link there and finishes.
      expect(await worker.enqueue(page(`${a}/link`, 2), 0)).toBe("queued");
      expect(await worker.markDone(`${b}/p`)).toBe(true);
    });
    const saved = await serializeCrawlState(reader, client, reader.keys, "snap", (url) => url);
    const known = new Set([...saved.finished, ...[...saved.queued, ...saved.pending].map(urlOf)]);
    // Either the link is saved, or the page that queued it is saved to be crawled again (it finds the link again).
    expect(known.has(`${a}/link`) || [...saved.queued, ...saved.pending].map(urlOf).includes(`${b}/p`)).toBe(true);
    expect(sorted([...saved.queued, ...saved.pending].map(urlOf))).toEqual(sorted([`${a}/q1`, `${b}/p`]));
    expect(saved.finished).toEqual([]);
  });

  it("keeps a retry that moves from the delayed set into a list while the shard is read", async () => {
    await redis.client.flushdb();
    const reader = crawl("retry", "reader", 1);
    const worker = crawl("retry", "worker", 1);
    for (const url of ["http://a.test/r", "http://a.test/q1", "http://a.test/q2"]) await worker.enqueue(page(url), 0);
    const r = (await worker.take())!;
    expect(r.url).toBe("http://a.test/r");
    // A failed attempt: r waits out its back-off in the delayed set, due at once.
    expect(await worker.markFailed(r.url, "boom", 3)).toBe("retry");
    const [shard] = await reader.shards();
    await redis.client.zadd(shard!.delayed, 0, (await redis.client.zrange(shard!.delayed, 0, -1))[0]!);
    const client = interrupted(redis.client, shard!.queueAtDepth, async () => {
      // The lists were just read: a take moves the due retry into its list (and takes q1, read already).
      await worker.take();
    });
    const saved = await serializeCrawlState(reader, client, reader.keys, "retry", (url) => url);
    expect(sorted([...saved.queued, ...saved.pending].map(urlOf))).toEqual(["http://a.test/q1", "http://a.test/q2", "http://a.test/r"]);
    const retry = [...saved.queued, ...saved.pending].find((json) => urlOf(json) === "http://a.test/r")!;
    expect(JSON.parse(retry)).toMatchObject({ retry: 1 });
    // The take waited for the snapshot: now the crawl goes on.
    expect(unpackEntry((await redis.client.lrange(`${shard!.queueAtDepth}1`, 0, -1))[0] ?? "1,0,0,x").url).toBeTruthy();
    expect(await worker.take()).not.toBeNull();
  });
});
