// Leases of the import queue carry the token of one take: an importer whose lease expired (its entry
// requeued and taken by another importer) can no longer renew, release or fail that entry.
import { describe, expect, it } from "vitest";
import { ImportQueue } from "../../../indexer/importQueue.js";
import { dedupeKeys } from "../../../src/dedupe/indexKeys.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();
const entry = { name: "x.wacz", location: "file:///archive/x.wacz", crawlId: "x" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


async function expireAndHandOver(): Promise<{ stale: ImportQueue; live: ImportQueue; staleLease: NonNullable<Awaited<ReturnType<ImportQueue["take"]>>>; liveLease: NonNullable<Awaited<ReturnType<ImportQueue["take"]>>> }> {
  const stale = new ImportQueue(redis.client, "importer-a", 200);
  const live = new ImportQueue(redis.client, "importer-b", 60_000);
  expect(await stale.enqueue([entry])).toBe(1);
  const staleLease = (await stale.take())!;
  expect(staleLease.resource).toEqual(entry);
  await sleep(400); // importer A stalls past its lease
  expect(await live.recoverExpired()).toEqual(["x.wacz"]);
  const liveLease = (await live.take())!;
  expect(liveLease.resource).toEqual(entry);
  return { stale, live, staleLease, liveLease };
}

describe("import queue leases", () => {
  it("a stale importer's release, fail and renew leave another importer's entry alone", async () => {
    const { stale, live, staleLease, liveLease } = await expireAndHandOver();
    const leaseKey = dedupeKeys.importLease("x.wacz");

    expect(await stale.release(staleLease)).toBe(false);
    expect(await stale.fail(staleLease)).toBe(false);
    expect(await stale.renew(staleLease)).toBe(false);
    // B's entry is still pending under B's lease and still known as queued: if B dies now, it is recovered.
    expect(Object.keys(await redis.client.hgetall(dedupeKeys.importPending))).toEqual(["x.wacz"]);
    expect(await redis.client.get(leaseKey)).toBe(liveLease.token);
    expect(await redis.client.pttl(leaseKey)).toBeGreaterThan(30_000);
    expect(await redis.client.sismember(dedupeKeys.importQueued, "x.wacz")).toBe(1);
    expect(await live.isDrained()).toBe(false);

    expect(await live.renew(liveLease)).toBe(true);
    expect(await live.release(liveLease)).toBe(true);
    expect(await live.isDrained()).toBe(true);
    expect(await redis.client.exists(leaseKey)).toBe(0);
  });

  it("if the live importer dies, its entry is recovered and imported by another", async () => {
    const { stale, staleLease, liveLease } = await expireAndHandOver();
    await stale.release(staleLease);
    // B dies: its lease runs out.
    await redis.client.pexpire(dedupeKeys.importLease("x.wacz"), 1);
    await sleep(20);
    const third = new ImportQueue(redis.client, "importer-c", 60_000);
    expect(await third.recoverExpired()).toEqual(["x.wacz"]);
    const lease = (await third.take())!;
    expect(lease.resource).toEqual(entry);
    expect(lease.token).not.toBe(liveLease.token);
    expect(await third.fail(lease)).toBe(true);
    expect(await redis.client.sismember(dedupeKeys.importQueued, "x.wacz")).toBe(0);
    expect(await third.isDrained()).toBe(true);
  });
});

describe("queueing checks what is imported, not what was once queued", () => {
  it("an entry a killed run left in src:qset but in no queue is queued again, and imported entries are not", async () => {
    // The state a kill between the old SADD src:qset and RPUSH src:q left behind.
    await redis.client.sadd(dedupeKeys.importQueued, "x.wacz");
    const queue = new ImportQueue(redis.client, "importer-a", 60_000);
    expect(await queue.enqueue([entry])).toBe(1);
    expect(await redis.client.lrange(dedupeKeys.importQueue, 0, -1)).toEqual([JSON.stringify(entry)]);
    // Queued now: a second enqueue (another importer, or the same manifest listing it twice) adds nothing.
    expect(await queue.enqueue([entry, entry])).toBe(0);
    const lease = (await queue.take())!;
    expect(lease.resource).toEqual(entry);
    // Being imported (pending under a live lease): not queued again.
    expect(await queue.enqueue([entry])).toBe(0);
    await redis.client.sadd(dedupeKeys.importDone, "x.wacz");
    expect(await queue.release(lease)).toBe(true);
    // Imported: never queued again.
    expect(await queue.enqueue([entry])).toBe(0);
    expect(await queue.isDrained()).toBe(true);
  });

  it("an entry that failed (forgotten in src:qset) is queued by the next run", async () => {
    const queue = new ImportQueue(redis.client, "importer-a", 60_000);
    expect(await queue.enqueue([entry])).toBe(1);
    expect(await queue.fail((await queue.take())!)).toBe(true);
    expect(await queue.enqueue([entry])).toBe(1);
  });
});
