// Every revisit the pipeline writes names a response record, and the capture history keeps that response
// for a URL written as a revisit, so the next refresh's 304 of that URL names it too (replay tools resolve
// a revisit one step: a revisit naming a revisit leaves the page missing).
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfirmedCapture, Exchange } from "../../../src/archive/exchange.js";
import { warcDateToDigits } from "../../../src/archive/warcDate.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { openCapturePipeline, type OpenPipeline } from "../../../src/pipeline/openPipeline.js";
import { Liveness } from "../../../src/state/membership/fencing.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords, sha256, type RawRecord } from "../../helpers/warcFile.js";

let redis: TestRedis;
let dir: string;
beforeAll(async () => {
  redis = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "revisit-history-"));
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

const PAGE_BYTES = Buffer.from(`<html><body>${"Search the documentation. ".repeat(100)}</body></html>`);
const HEADERS: [string, string][] = [["Content-Type", "text/html"], ["ETag", '"v1"'], ["Content-Length", String(PAGE_BYTES.length)]];
const exchange = (url: string, fields: Partial<Exchange> = {}): Exchange => ({
  url, method: "GET", requestHeaders: [["Accept", "text/html"]], postData: null, status: 200, statusText: "OK", httpVersion: "HTTP/1.1",
  responseHeaders: HEADERS, body: { kind: "bytes", bytes: new Uint8Array(PAGE_BYTES) }, bodyDecoded: true, date: new Date(), resourceType: "Document",
  ...fields,
});
const captureOf = async (url: string) => JSON.parse((await redis.client.hget("u:rh", url))!) as Record<string, unknown>;

describe("revisits and the capture history", () => {
  it("an identical payload's revisit names the response (never an earlier revisit), and the history keeps that response; a 304's too", async () => {
    const digest = sha256(PAGE_BYTES);
    // A committed crawl holding a page whose 304 this crawl gets (the refresh resolved its response).
    await redis.client.rpush("c:old:wacz", JSON.stringify({ filename: "old.wacz", hash: "sha256:00", size: 10 }));
    await redis.client.sadd("allcrawls", "old");

    const membership = new Membership(redis.client, "rh", "test-host-1-abcd");
    const liveness = new Liveness(membership, () => undefined);
    await liveness.start();
    const dedupe = new DedupeIndex(redis.client, "rh");
    await dedupe.registerCrawl();
    const archiveDir = join(dir, "archive");
    let pipeline: OpenPipeline | null = null;
    try {
      pipeline = await openCapturePipeline({
        settings: { crawlId: "rh", collection: "rh", title: null, rolloverSize: 1e9, dedupeMinSize: 512 },
        stateRedis: redis.client, dedupe, membership, liveness, writer: "main", archiveDir, stop: { fatal: () => undefined },
      });
      const stored = [];
      for (const url of ["http://site.test/search.html", "http://site.test/search.html?q=", "http://site.test/search.html?q=&lang="]) {
        stored.push((await pipeline.sink.store(exchange(url))).kind);
      }
      expect(stored).toEqual(["response", "revisit", "revisit"]);
      const confirms: ConfirmedCapture = {
        url: "http://site.test/old.html", crawlId: "old", date: "20260101000000123", digest: "sha256:" + "0f".repeat(32), waczIndex: 0, waczFilename: "old.wacz",
        status: 200, statusText: "OK", headers: [["content-type", "text/html"]],
      };
      const notModified = exchange("http://site.test/old.html?q=", { status: 304, statusText: "Not Modified", responseHeaders: [["ETag", '"v1"']], body: { kind: "bytes", bytes: new Uint8Array(0) }, confirms });
      expect((await pipeline.sink.store(notModified)).kind).toBe("revisit");
      await pipeline.close();

      const records: RawRecord[] = readdirSync(archiveDir).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(archiveDir, f)));
      const named = (type: string) => records.filter((r) => r.headers.get("warc-type") === type)
        .map((r) => [r.headers.get("warc-target-uri"), r.headers.get("warc-refers-to-target-uri"), r.headers.get("warc-refers-to-date")]);
      const response = records.find((r) => r.headers.get("warc-type") === "response")!;
      const responseDate = response.headers.get("warc-date")!;
      expect(named("revisit")).toEqual([
        ["http://site.test/search.html?q=", "http://site.test/search.html", responseDate],
        ["http://site.test/search.html?q=&lang=", "http://site.test/search.html", responseDate],
        ["http://site.test/old.html?q=", "http://site.test/old.html", "2026-01-01T00:00:00.123Z"],
      ]);
      // The dedupe index holds the response only: a revisit is never an original.
      expect(await redis.client.hgetall("h:rh")).toEqual({ [digest]: `0 ${warcDateToDigits(responseDate)} http://site.test/search.html ${response.length}` });

      const original = { crawlId: "rh", date: warcDateToDigits(responseDate), waczIndex: 0, url: "http://site.test/search.html" };
      expect(await captureOf("http://site.test/search.html")).not.toHaveProperty("original");
      expect(await captureOf("http://site.test/search.html?q=")).toMatchObject({ status: 200, digest, original });
      expect(await captureOf("http://site.test/search.html?q=&lang=")).toMatchObject({ status: 200, digest, original });
      expect(await captureOf("http://site.test/old.html?q=")).toMatchObject({
        status: 304, digest: confirms.digest, original: { crawlId: "old", date: "20260101000000123", waczIndex: 0, url: "http://site.test/old.html" },
      });
    } finally {
      liveness.stop();
    }
  });
});
