import { describe, expect, it } from "vitest";
import { cancelCrawl, commitCrawl } from "../../../src/dedupe/commit.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { purgeCrawls } from "../../../src/dedupe/purge.js";
import { usePrivateRedis } from "../../helpers/redis.js";

// --dedupeConcurrent in the index: a concurrent crawl's originals are in allhashes as written, and
// commit, cancel and purge keep allhashes pointing only at crawls that hold the entries.

const redis = usePrivateRedis();

const digest = (n: number) => "sha256:" + String(n).padStart(2, "0").repeat(32);
const entry = (url: string) => ({ waczIndex: 0, date: "20260102030405", url, size: 2000 });

async function crawlWith(crawlId: string, concurrent: boolean, digests: number[]): Promise<DedupeIndex> {
  const index = new DedupeIndex(redis.client, crawlId, concurrent);
  await index.registerCrawl();
  for (const n of digests) await index.addOriginal(digest(n), entry(`http://a.test/${crawlId}/${n}`));
  return index;
}

describe("--dedupeConcurrent in the dedupe index", () => {
  it("publishes a concurrent crawl's originals at once (first writer wins); another crawl's only at commit", async () => {
    await crawlWith("plain", false, [1, 2]);
    await crawlWith("live", true, [2, 3]);
    expect(await redis.client.hgetall("allhashes")).toEqual({ [digest(2)]: "live", [digest(3)]: "live" });
    expect(await redis.client.smembers("uncommittedcrawls")).toEqual(expect.arrayContaining(["plain", "live"]));
    expect(await redis.client.smembers("concurrentcrawls")).toEqual(["live"]);
    // A third crawl finds the live one's payload before anything is committed.
    expect((await new DedupeIndex(redis.client, "other").lookup(digest(3)))?.crawlId).toBe("live");
    expect(await new DedupeIndex(redis.client, "other").lookup(digest(1))).toBeNull();

    await commitCrawl(redis.client, "plain");
    expect(await redis.client.hgetall("allhashes")).toEqual({ [digest(1)]: "plain", [digest(2)]: "live", [digest(3)]: "live" });
    await commitCrawl(redis.client, "live");
    expect(await redis.client.smembers("concurrentcrawls")).toEqual([]);
    expect((await redis.client.smembers("allcrawls")).sort()).toEqual(["live", "plain"]);
  });

  it("cancel takes a concurrent crawl's entries out of allhashes and refills the holes from committed crawls", async () => {
    await crawlWith("done", false, [1, 2]);
    await crawlWith("live", true, [2, 3, 4]);
    await commitCrawl(redis.client, "done");
    // digest 2 was published by "live" first; "done" holds it too.
    expect(await redis.client.hget("allhashes", digest(2))).toBe("live");
    await cancelCrawl(redis.client, "live");
    expect(await redis.client.hgetall("allhashes")).toEqual({ [digest(1)]: "done", [digest(2)]: "done" });
    expect(await redis.client.smembers("concurrentcrawls")).toEqual([]);
    expect(await redis.client.exists("h:live")).toBe(0);
  });

  it("a purge (indexer --remove) rebuilds allhashes without dropping the concurrent crawls still running", async () => {
    await crawlWith("old", false, [1, 5]);
    await commitCrawl(redis.client, "old");
    await crawlWith("live", true, [5, 6]);
    await purgeCrawls(redis.client, ["old"]);
    expect(await redis.client.hgetall("allhashes")).toEqual({ [digest(5)]: "live", [digest(6)]: "live" });
  });

  it("a crawl resumed with the flag publishes what its earlier run indexed", async () => {
    await crawlWith("resumed", false, [7]);
    expect(await redis.client.hget("allhashes", digest(7))).toBeNull();
    await crawlWith("resumed", true, [8]);
    expect(await redis.client.hgetall("allhashes")).toEqual({ [digest(7)]: "resumed", [digest(8)]: "resumed" });
  });
});
