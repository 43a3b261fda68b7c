// An exchange claim whose confirm failed while Redis was away, and whose unclaim failed too, is still this
// process's claim in Redis once Redis is back. No tab of this process is writing it, so the next capture of
// the exchange claims it at once, instead of reading it as "being written" and waiting out the pending-claim
// wait (60 s) on every later capture.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newProcessId } from "../../../src/ownership/processIdentity.js";
import { ExchangeClaims, type ExchangeIdentity } from "../../../src/state/exchangeClaims.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis(true); // persisted: the claim written before the outage is there after it
});
afterAll(async () => {
  await redis.stop();
});

/** Until the connection answers again after a restart of the server. */
async function answering(client: Redis): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await client.ping().then(() => true, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("redis-server did not come back");
}

describe("an exchange claim left behind while Redis was away", () => {
  it("is claimed again at once by this process's next capture, and by one tab only", async () => {
    // A connection that fails commands while the server is away (as a crawl's does once its wait runs out).
    const client = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on("error", () => undefined);
    try {
      await answering(client);
      const membership = new Membership(client, "left", newProcessId("aaaa1111"));
      const claims = new ExchangeClaims(client, membership);
      const exchange: ExchangeIdentity = { status: 200, method: "GET", url: "http://site.test/image.png" };
      expect(await claims.claim(exchange)).toEqual({ claimed: true });

      await redis.stopServer();
      await expect(claims.confirm(exchange, "left.wacz")).rejects.toThrow();
      await expect(claims.unclaim(exchange)).rejects.toThrow();
      await redis.restartServer();
      await answering(client);
      // Redis still holds this process's provisional claim.
      expect(await client.hget(membership.keys.storedExchanges, `200 GET ${exchange.url}`)).toBe(membership.processId);

      const started = Date.now();
      expect(await claims.claim(exchange)).toEqual({ claimed: true });
      expect(Date.now() - started).toBeLessThan(2000);
      // Another tab of this process asking now is told it is being written (it waits), not given it too.
      expect(await claims.claim(exchange)).toEqual({ claimed: false, storedIn: null, pending: true });
      await claims.confirm(exchange, "left.wacz");
      expect(await claims.claim(exchange)).toEqual({ claimed: false, storedIn: "left.wacz" });
      expect(await claims.isStored(exchange)).toBe(true);
    } finally {
      client.disconnect();
    }
  }, 30_000);
});
