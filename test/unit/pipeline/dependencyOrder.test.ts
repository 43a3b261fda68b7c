// A revisit's dependency on its original's WACZ is recorded before the revisit is written: if it cannot
// be recorded (here a real Redis error: the key holds the wrong type), nothing is written and the
// exchange's claim is released, so relation.requires can never miss a revisit that is in the WARC.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Exchange } from "../../../src/archive/exchange.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { openCapturePipeline, type OpenPipeline } from "../../../src/pipeline/openPipeline.js";
import { Liveness } from "../../../src/state/membership/fencing.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords, sha256 } from "../../helpers/warcFile.js";

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "dependency-order-"));
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

const BODY = Buffer.alloc(4000, "dependency order ");
const exchange = (url: string): Exchange => ({
  url, method: "GET", requestHeaders: [["Accept", "*/*"]], postData: null, status: 200, statusText: "OK", httpVersion: "HTTP/1.1",
  responseHeaders: [["Content-Type", "image/png"], ["Content-Length", String(BODY.length)]], body: { kind: "bytes", bytes: new Uint8Array(BODY) },
  bodyDecoded: true, date: new Date(), resourceType: "Image",
});

describe("a revisit's dependency is recorded before the revisit", () => {
  it("when it cannot be recorded, the revisit is not written and the exchange can be stored later", async () => {
    // A committed crawl holds the payload in a packaged WACZ: the next capture of it is a revisit.
    const digest = sha256(BODY);
    await redis.client.hset("h:old", digest, "0 20260101000000123 http://site.test/original.png 5000");
    await redis.client.hset("allhashes", digest, "old");
    await redis.client.rpush("c:old:wacz", JSON.stringify({ filename: "old.wacz", hash: "sha256:00", size: 10 }));

    const membership = new Membership(redis.client, "dep", "test-host-1-abcd");
    const liveness = new Liveness(membership, () => undefined);
    await liveness.start();
    const dedupe = new DedupeIndex(redis.client, "dep");
    await dedupe.registerCrawl();
    const archiveDir = join(dir, "archive");
    let pipeline: OpenPipeline | null = null;
    try {
      pipeline = await openCapturePipeline({
        settings: { crawlId: "dep", collection: "dep", title: null, rolloverSize: 1e9, dedupeMinSize: 512 },
        stateRedis: redis.client, dedupe, membership, liveness, writer: "main", archiveDir, stop: { fatal: () => undefined },
      });
      // The dependency key of the WACZ the revisit would go into cannot take it (a real Redis error).
      await redis.client.set("dep:duperefs:dep.wacz", "not a set");
      await expect(pipeline.sink.store(exchange("http://site.test/copy.png"))).rejects.toThrow(/WRONGTYPE/);
      expect(await redis.client.hgetall("dep:exch")).toEqual({});

      // Once it can be recorded, the same exchange is stored: a revisit, with its dependency.
      await redis.client.del("dep:duperefs:dep.wacz");
      const stored = await pipeline.sink.store(exchange("http://site.test/copy.png"));
      expect(stored.kind).toBe("revisit");
      expect(await redis.client.smembers("dep:duperefs:dep.wacz")).toEqual(["old 0"]);
      await pipeline.close();
      const revisits = readdirSync(archiveDir).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(archiveDir, f)))
        .filter((r) => r.headers.get("warc-type") === "revisit");
      expect(revisits.map((r) => r.headers.get("warc-target-uri"))).toEqual(["http://site.test/copy.png"]);
    } finally {
      liveness.stop();
    }
  });
});
