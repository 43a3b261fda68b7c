// A purge racing crawls' commits (issue 28, item 8), in both layouts (the sharded one on one node): in
// each seeded round, crawls commit from their own connections at random moments while another crawl is
// purged, and a running crawl keeps looking payloads up. After every round each committed crawl has every
// hash in allhashes, naming a committed crawl that holds it; allcounts is the sum of the committed crawls'
// counts; and no lookup answered with the crawl being purged once it had left allcrawls. The sharded
// layout runs on one node and, fewer rounds, on a real 3-node Redis Cluster.
// Replay a round: PURGE_RACE_SEED=<seed> PURGE_RACE_ROUNDS=1 npx vitest run test/unit/dedupe/purgeRace.test.ts
import { Cluster, Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalCluster } from "../../../bench/lib/localCluster.js";
import { commitCrawl } from "../../../src/dedupe/commit.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { connectDedupeIndex } from "../../../src/dedupe/connectIndex.js";
import { createShardedLayout, loadLayout, type DedupeRedis } from "../../../src/dedupe/indexLayout.js";
import { purgeCrawls } from "../../../src/dedupe/purge.js";
import { resetCluster, singleLayoutView } from "../../helpers/dedupeCluster.js";
import { usePrivateRedis } from "../../helpers/redis.js";
import { seededRandom as prng } from "../../helpers/seededRandom.js";

// A new base seed each run (so CI runs try many), printed in the test names and failure messages.
const BASE_SEED = Number(process.env.PURGE_RACE_SEED ?? Math.floor(Math.random() * 1_000_000));
const ROUNDS = Number(process.env.PURGE_RACE_ROUNDS ?? 8);

const redis = usePrivateRedis();
const clients: DedupeRedis[] = [];
afterAll(() => clients.forEach((c) => c.disconnect()));


/** A connection of its own to the test's redis-server, as another process would have, with the index's layout loaded. */
async function connectSingle(): Promise<DedupeRedis> {
  const client = new Redis(redis.url);
  clients.push(client);
  await loadLayout(client, false);
  return client;
}

const digest = (n: number) => "sha256:" + n.toString(16).padStart(64, "0");

/** An uncommitted crawl holding `count` payloads from `from` on (so crawls share some), with counts. */
async function writeCrawl(client: DedupeRedis, crawlId: string, from: number, count: number): Promise<void> {
  const index = new DedupeIndex(client, crawlId);
  await index.registerCrawl();
  await index.registerWacz(`${crawlId}.wacz`);
  await index.finishWacz(0, { filename: `${crawlId}.wacz`, hash: `sha256:${crawlId}`, size: 1000 });
  const pipeline: Promise<unknown>[] = [];
  for (let n = from; n < from + count; n++) pipeline.push(index.addOriginal(digest(n), { waczIndex: 0, date: "20260102030405", url: `http://race.test/${n}`, size: 3000 }));
  await Promise.all(pipeline);
  await index.addCounts({ totalUrls: count, dupeUrls: 1, conservedSize: 100 });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function raceRounds(layoutName: string, rounds: number, connect: () => Promise<DedupeRedis> = connectSingle): Promise<void> {
  const [purger, looker, ...committers] = await Promise.all([connect(), connect(), connect(), connect()]);
  const view = await connect();
  // Committed crawls make the rebuild long enough to race with.
  for (let i = 0; i < 6; i++) {
    await writeCrawl(view, `base${i}`, i * 1500, 2000);
    await commitCrawl(view, `base${i}`);
  }
  for (let round = 0; round < rounds; round++) {
    const seed = BASE_SEED + round;
    const random = prng(seed);
    const context = `${layoutName}, seed ${seed}`;
    const purged = `purged${round}`;
    await writeCrawl(view, purged, 100_000 + round * 10, 300);
    await commitCrawl(view, purged);
    const racing = committers.map((_, i) => `r${round}c${i}`);
    for (const [i, crawlId] of racing.entries()) await writeCrawl(view, crawlId, 200_000 + round * 5000 + i * 400, 1000 + Math.floor(random() * 1500));
    // Commits merge in small pages (many calls), started at random moments around the purge's start.
    const delays = racing.map(() => Math.floor(random() * 20));
    const purgeDelay = Math.floor(random() * 20);

    // A running crawl's lookups of the purged crawl's payloads, from before the purge to its end.
    let purgeDone = false;
    const wrongAnswers: string[] = [];
    const running = new DedupeIndex(looker, "running");
    const lookups = (async () => {
      while (!purgeDone) {
        const gone = (await view.sismember(layoutName === "single" ? "allcrawls" : "{dd}allcrawls", purged)) === 0;
        const found = await running.lookup(digest(100_000 + round * 10 + Math.floor(random() * 300)));
        if (gone && found?.crawlId === purged) wrongAnswers.push(`${found.crawlId} after it left allcrawls`);
      }
    })();
    await Promise.all([
      sleep(purgeDelay).then(() => purgeCrawls(purger, [purged])).finally(() => (purgeDone = true)),
      ...racing.map(async (crawlId, i) => {
        await sleep(delays[i]!);
        await commitCrawl(committers[i]!, crawlId, 200);
      }),
    ]);
    await lookups;
    expect(wrongAnswers, context).toEqual([]);

    const index = await singleLayoutView(view);
    const committed = index["allcrawls"] as string[];
    expect(committed, context).toEqual(expect.arrayContaining(racing));
    expect(committed, context).not.toContain(purged);
    const allhashes = (index["allhashes"] ?? {}) as Record<string, string>;
    const sums: Record<string, number> = {};
    const holds = (crawlId: string, hashDigest: string) => Object.hasOwn((index[`h:${crawlId}`] ?? {}) as object, hashDigest);
    const problems: string[] = [];
    for (const crawlId of committed) {
      for (const hashDigest of Object.keys((index[`h:${crawlId}`] ?? {}) as object)) {
        const holder = allhashes[hashDigest];
        if (holder === undefined) problems.push(`${crawlId}'s ${hashDigest} is not in allhashes`);
        else if (!committed.includes(holder) || !holds(holder, hashDigest)) problems.push(`${hashDigest} names ${holder}, which does not hold it`);
      }
      for (const [field, value] of Object.entries(index[`h:${crawlId}:counts`] as Record<string, string>)) sums[field] = (sums[field] ?? 0) + Number(value);
    }
    expect(problems.slice(0, 5), `${context} (purge after ${purgeDelay} ms, commits after ${delays.join(", ")} ms): ${problems.length} problems`).toEqual([]);
    const allcounts = index["allcounts"] as Record<string, string>;
    for (const [field, sum] of Object.entries(sums)) expect(Number(allcounts[field]), `${context}: allcounts ${field}`).toBe(sum);
    expect(Object.values(allhashes), context).not.toContain(purged);
  }
}

describe("a purge racing commits", () => {
  it(`single-node layout: no committed crawl loses its entries (${ROUNDS} seeded rounds from ${BASE_SEED})`, async () => {
    await raceRounds("single", ROUNDS);
  }, 90_000);

  it(`sharded layout: the same (${ROUNDS} seeded rounds from ${BASE_SEED})`, async () => {
    await createShardedLayout(redis.client, 2);
    await raceRounds("sharded", ROUNDS);
  }, 90_000);

  it(`on a 3-node Redis Cluster: the same (${Math.ceil(ROUNDS / 3)} seeded rounds from ${BASE_SEED})`, async () => {
    const cluster = await startLocalCluster(3);
    try {
      const first = await connectDedupeIndex(cluster.url, "test cluster");
      clients.push(first);
      await resetCluster(first as Cluster, 2);
      await raceRounds("cluster", Math.ceil(ROUNDS / 3), async () => {
        const client = await connectDedupeIndex(cluster.url, "test cluster");
        clients.push(client);
        return client;
      });
    } finally {
      clients.splice(0).forEach((c) => c.disconnect());
      await cluster.stop();
    }
  }, 120_000);
});
