// An exchange another tab is writing right now is not "stored" until that write succeeds: if it fails, the
// exchange is stored by the tab that waited (issue 28, item 10: a skipped exchange used to be lost).
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Exchange, ExchangeBody } from "../../../src/archive/exchange.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { openCapturePipeline, type OpenPipeline } from "../../../src/pipeline/openPipeline.js";
import { Liveness } from "../../../src/state/membership/fencing.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "pending-claims-"));
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

const BODY = Buffer.alloc(3000, "pending claim ");
const exchange = (url: string, body: ExchangeBody): Exchange => ({
  url, method: "GET", requestHeaders: [["Accept", "*/*"]], postData: null, status: 200, statusText: "OK", httpVersion: "HTTP/1.1",
  responseHeaders: [["Content-Type", "image/png"]], body, bodyDecoded: true, date: new Date(), resourceType: "Image",
});

describe("an exchange being written by another tab", () => {
  it("is stored by the tab that waited when the first write fails, and once when it succeeds", async () => {
    const membership = new Membership(redis.client, "pend", "test-host-1-abcd");
    const liveness = new Liveness(membership, () => undefined);
    await liveness.start();
    const dedupe = new DedupeIndex(redis.client, "pend");
    await dedupe.registerCrawl();
    const archiveDir = join(dir, "archive");
    let pipeline: OpenPipeline | null = null;
    try {
      pipeline = await openCapturePipeline({
        settings: { crawlId: "pend", collection: "pend", title: null, rolloverSize: 1e9, dedupeMinSize: 512 },
        stateRedis: redis.client, dedupe, membership, liveness, writer: "main", archiveDir, stop: { fatal: () => undefined },
      });
      // Two tabs store the same image at once; the first one's body is gone (its write fails after its claim).
      const lostUrl = "http://site.test/first-write-fails.png";
      const first = pipeline.sink.store(exchange(lostUrl, { kind: "file", path: join(dir, "no-such-body"), size: BODY.length }));
      const second = pipeline.sink.store(exchange(lostUrl, { kind: "bytes", bytes: new Uint8Array(BODY) }));
      await expect(first).rejects.toThrow(/ENOENT/);
      expect((await second).kind).toBe("response");

      // Both writes succeed: stored once, the second tab told it is stored (not left pending).
      const okUrl = "http://site.test/both-succeed.png";
      const other = Buffer.alloc(3000, "another image ");
      const outcomes = await Promise.all([1, 2].map(() => pipeline!.sink.store(exchange(okUrl, { kind: "bytes", bytes: new Uint8Array(other) }))));
      expect(outcomes.map((o) => o.kind).sort()).toEqual(["response", "skipped"]);
      expect(outcomes.find((o) => o.kind === "skipped")).toMatchObject({ reason: "already-stored", wacz: "pend.wacz" });

      await pipeline.close();
      pipeline = null;
      const responses = readdirSync(archiveDir).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(archiveDir, f)))
        .filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type") ?? "")).map((r) => r.headers.get("warc-target-uri"));
      expect(responses.sort()).toEqual([lostUrl, okUrl].sort());
      expect(await redis.client.hgetall("pend:exch")).toEqual({ [`200 GET ${lostUrl}`]: "stored pend.wacz", [`200 GET ${okUrl}`]: "stored pend.wacz" });
    } finally {
      await pipeline?.close();
      liveness.stop();
    }
  });
});
