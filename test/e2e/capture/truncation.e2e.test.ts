import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CUT_OFF_DECLARED_LENGTH, CUT_OFF_SENT_LENGTH, cutOffPageHead, startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { dedupeKeys } from "../../../src/dedupe/indexKeys.js";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { httpHeader, httpStatus, readWarcRecords, sha256, type RawRecord } from "../../helpers/warcFile.js";

let site: FixtureServer;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];

beforeAll(async () => {
  site = await startFixtureServer();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-truncation-"));
  crawl = await runCli("crawl", [
    "--url", `${site.url}/cut/page.html`, "--url", `${site.url}/cut/once.html`, "--scopeType", "page",
    "--collection", "cut", "--cwd", cwd, "--maxPageRetries", "1", "--netIdleWait", "1",
    "--redisDedupeUrl", redis.url, "--statsFilename", join(cwd, "stats.json"),
  ]);
  const archive = join(cwd, "collections", "cut", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 180_000);

afterAll(async () => {
  await site?.close();
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

const responsesFor = (path: string) =>
  records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === site.url + path);

describe("a response cut off mid-body", () => {
  it("is retried; a page whole on its retry is stored whole, once, and not reported truncated", () => {
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    expect(site.requests.filter((r) => r.url === "/cut/once.html").length).toBe(2);
    const [once, ...more] = responsesFor("/cut/once.html");
    expect(more).toEqual([]);
    expect(once.payload.length).toBe(CUT_OFF_DECLARED_LENGTH);
    expect(once.headers.get("warc-truncated")).toBeUndefined();
  });

  it("still short after every retry, is stored as received, marked WARC-Truncated: disconnect", () => {
    // First attempt and its one retry.
    expect(site.requests.filter((r) => r.url === "/cut/page.html").length).toBe(2);
    const stored = responsesFor("/cut/page.html");
    expect(stored.length).toBe(1);
    const [page] = stored;
    expect(httpStatus(page)).toBe(200);
    expect(page.headers.get("warc-truncated")).toBe("disconnect");
    expect(page.payload).toEqual(cutOffPageHead("/cut/page.html"));
    expect(page.payload.length).toBe(CUT_OFF_SENT_LENGTH);
    expect(httpHeader(page, "content-length")).toBe(String(CUT_OFF_SENT_LENGTH));
    expect(httpHeader(page, "x-orig-content-length")).toBe(String(CUT_OFF_DECLARED_LENGTH));
  });

  it("is reported: stats and log name the truncated page", () => {
    const stats = JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8"));
    expect(stats).toMatchObject({ crawled: 2, failed: 0, status: "done" });
    expect(stats.truncated.count).toBe(1);
    // Counts in the stats, the list in the report file (bounded stats for any size of crawl).
    const listed = readFileSync(stats.truncated.report, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(listed).toEqual([{ url: `${site.url}/cut/page.html`, truncated: [`${site.url}/cut/page.html`] }]);
    const warned = crawl.stderr.split("\n").filter((l) => l.includes("page crawled, but truncated")).map((l) => JSON.parse(l).details.url);
    expect(warned).toEqual([`${site.url}/cut/page.html`]);
  });

  it("never becomes a dedupe original nor a capture in the history", async () => {
    const [page] = responsesFor("/cut/page.html");
    expect(await redis.client.hget(dedupeKeys.crawlHashes("cut"), page.headers.get("warc-payload-digest")!)).toBeNull();
    expect(await redis.client.hget(dedupeKeys.crawlCaptures("cut"), `${site.url}/cut/page.html`)).toBeNull();
    // The whole page is both.
    const [once] = responsesFor("/cut/once.html");
    expect(once.headers.get("warc-payload-digest")).toBe(sha256(once.payload));
    expect(await redis.client.hget(dedupeKeys.crawlHashes("cut"), once.headers.get("warc-payload-digest")!)).not.toBeNull();
  });
});
