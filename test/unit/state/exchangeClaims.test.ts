// A stored exchange is stored for good in a crawl: a process asks Redis once, then remembers. What is not stored
// (nothing, or a claim being written) is asked again every time.
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { newProcessId } from "../../../src/ownership/processIdentity.js";
import { ExchangeClaims, type ExchangeIdentity } from "../../../src/state/exchangeClaims.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();

/** Reads of the claims hash the server has run (HGET and HMGET). */
async function hgets(client: Redis): Promise<number> {
  const stats = await client.info("commandstats");
  return Number(/cmdstat_hget:calls=(\d+)/.exec(stats)?.[1] ?? 0) + Number(/cmdstat_hmget:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

describe("ExchangeClaims.isStored", () => {
  it("asks Redis until the exchange is stored, then answers from what the process saw", async () => {
    const writer = new ExchangeClaims(redis.client, new Membership(redis.client, "claims", newProcessId("aaaa1111")));
    const reader = new ExchangeClaims(redis.client, new Membership(redis.client, "claims", newProcessId("bbbb2222")));
    const image: ExchangeIdentity = { status: 200, method: "GET", url: "http://site.test/image.png" };

    let before = await hgets(redis.client);
    expect(await reader.isStored(image)).toBe(false);
    expect(await hgets(redis.client)).toBe(before + 1);
    expect(await writer.claim(image)).toEqual({ claimed: true });
    before = await hgets(redis.client);
    expect(await reader.isStored(image)).toBe(false); // being written: not stored yet
    expect(await hgets(redis.client)).toBe(before + 1);

    await writer.confirm(image, "claims.wacz");
    before = await hgets(redis.client);
    expect(await reader.isStored(image)).toBe(true);
    expect(await hgets(redis.client)).toBe(before + 1);
    before = await hgets(redis.client);
    for (let i = 0; i < 5; i++) expect(await reader.isStored(image)).toBe(true);
    // The writer knows from its own confirm.
    expect(await writer.isStored(image)).toBe(true);
    expect(await hgets(redis.client)).toBe(before);

    // Another status or method of the same URL is another exchange.
    expect(await reader.isStored({ ...image, status: 404 })).toBe(false);
  });

  it("a confirm that lost its claim (taken over meanwhile) is not remembered as stored by this process", async () => {
    const first = new ExchangeClaims(redis.client, new Membership(redis.client, "claims", newProcessId("aaaa1111")));
    const page: ExchangeIdentity = { status: 200, method: "GET", url: "http://site.test/page.html" };
    expect(await first.claim(page)).toEqual({ claimed: true });
    // Taken over by another process (the first was taken for dead): its write is the one that counts.
    await redis.client.hset("claims:exch", "200 GET http://site.test/page.html", "cccc3333-other");
    await first.confirm(page, "claims.wacz");
    expect(await first.isStored(page)).toBe(false);
  });
});

describe("ExchangeClaims.storedStatus", () => {
  it("names a stored status of those asked, in one read, and remembers it", async () => {
    const writer = new ExchangeClaims(redis.client, new Membership(redis.client, "status", newProcessId("aaaa1111")));
    const reader = new ExchangeClaims(redis.client, new Membership(redis.client, "status", newProcessId("bbbb2222")));
    const url = "http://site.test/missing.css";
    let before = await hgets(redis.client);
    expect(await reader.storedStatus("GET", url, [200, 404, 410])).toBeNull();
    expect(await hgets(redis.client)).toBe(before + 1);

    await writer.claim({ status: 404, method: "GET", url });
    expect(await reader.storedStatus("GET", url, [200, 404, 410])).toBeNull(); // being written
    await writer.confirm({ status: 404, method: "GET", url }, "status.wacz");
    expect(await reader.storedStatus("GET", url, [200, 404, 410])).toBe(404);
    expect(await reader.storedStatus("HEAD", url, [200, 404, 410])).toBeNull();
    before = await hgets(redis.client);
    expect(await reader.storedStatus("GET", url, [200, 404, 410])).toBe(404);
    expect(await reader.isStored({ status: 404, method: "GET", url })).toBe(true);
    expect(await hgets(redis.client)).toBe(before);

    // Of two stored, a process that knows neither reads the one asked for first.
    await writer.claim({ status: 200, method: "GET", url });
    await writer.confirm({ status: 200, method: "GET", url }, "status.wacz");
    const fresh = new ExchangeClaims(redis.client, new Membership(redis.client, "status", newProcessId("cccc3333")));
    expect(await fresh.storedStatus("GET", url, [200, 404, 410])).toBe(200);
  });
});
