// --refresh: a page's request is made conditional on its archived capture's validators, and the 304 it may
// get confirms the response record holding the archived payload: the capture's own, or the response the
// capture was a revisit of (a revisit naming a revisit leaves the page missing in replay).
import { describe, expect, it } from "vitest";
import { CaptureHistory, type KnownCapture } from "../../../src/dedupe/captureHistory.js";
import { commitCrawl } from "../../../src/dedupe/commit.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { conditionalHeaders, conditionalRequest, refreshRequest } from "../../../src/crawl/pages/refresh.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();

const PAYLOAD = "sha256:" + "c6".repeat(32);
const PAGE = "http://site.test/search.html";
const ALIAS = "http://site.test/search.html?q=";
const HEADERS: [string, string][] = [["content-type", "text/html"], ["etag", '"v1"']];
const PAGE_RESPONSE = { url: PAGE, crawlId: "one", date: "20260101000000123", waczIndex: 0, waczFilename: "one.wacz" };

/** The alias's capture in crawl two: a revisit of the page's response in crawl one. */
const aliasCapture = (fields: Partial<KnownCapture> = {}): KnownCapture => ({
  url: ALIAS, date: "20260201000000000", status: 200, digest: PAYLOAD, waczIndex: 0, crawlId: "two", waczFilename: "two.wacz", outlinks: null,
  etag: '"v1"', lastModified: "Thu, 01 Jan 2026 00:00:00 GMT", statusText: "OK", headers: HEADERS,
  original: { crawlId: "one", date: "20260101000000123", waczIndex: 0, url: PAGE }, ...fields,
});

describe("the conditional request of a refresh", () => {
  it("sends the capture's validators and confirms the response holding the payload, with the capture's own status line and headers", () => {
    expect(conditionalRequest(aliasCapture(), PAGE_RESPONSE)).toEqual({
      headers: { "If-None-Match": '"v1"', "If-Modified-Since": "Thu, 01 Jan 2026 00:00:00 GMT" },
      confirms: { ...PAGE_RESPONSE, digest: PAYLOAD, status: 200, statusText: "OK", headers: HEADERS },
    });
  });

  it("confirming a 304 stands for the response it confirmed: status 200", () => {
    const notModified = aliasCapture({ status: 304 });
    expect(conditionalRequest(notModified, PAGE_RESPONSE)?.confirms).toMatchObject({ url: PAGE, date: "20260101000000123", status: 200 });
  });

  it("is none for a redirect or an error, or without validators", () => {
    expect(conditionalHeaders(aliasCapture({ status: 301, original: undefined }))).toBeUndefined();
    expect(conditionalHeaders(aliasCapture({ status: 404, original: undefined }))).toBeUndefined();
    expect(conditionalHeaders(aliasCapture({ etag: undefined, lastModified: undefined }))).toBeUndefined();
    expect(conditionalRequest(aliasCapture({ etag: undefined, lastModified: undefined }), PAGE_RESPONSE)).toBeUndefined();
  });

  it("names the response the dedupe index holds for a revisit an earlier version recorded without its original", async () => {
    const one = new DedupeIndex(redis.client, "one");
    await one.registerCrawl();
    await one.registerWacz("one.wacz");
    await one.addOriginal(PAYLOAD, { waczIndex: 0, date: "20260101000000123", url: PAGE, size: 3000 });
    await one.finishWacz(0, { filename: "one.wacz", hash: "sha256:one", size: 10_000 });
    await commitCrawl(redis.client, "one");
    // Crawl one's own revisit of the page, as an earlier version recorded it: nothing says it was one.
    const legacy = aliasCapture({ crawlId: "one", date: "20260101000001456", waczFilename: "one.wacz", original: undefined });
    const request = await refreshRequest(legacy, new CaptureHistory(redis.client, "three"));
    expect(request?.confirms).toEqual({ ...PAGE_RESPONSE, digest: PAYLOAD, status: 200, statusText: "OK", headers: HEADERS });
  });
});
