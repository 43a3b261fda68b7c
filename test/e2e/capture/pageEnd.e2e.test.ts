import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { DYNAMIC_PAGES, SAME_PNG, startDynamicSite, type DynamicSite } from "../../../fixtures/dynamicSite.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// Pages that never stop fetching, crawled on the defaults: each page's capture ends with the page.
let site: DynamicSite;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
let endedAt: number;
const PAGES = ["/", ...Object.keys(DYNAMIC_PAGES), "/longpoll"].sort();

interface LogLine {
  timestamp: string;
  message: string;
  details?: Record<string, unknown>;
}
const logLines = () =>
  crawl.stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as LogLine);

beforeAll(async () => {
  site = await startDynamicSite();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-page-end-"));
  crawl = await runCli("crawl", [
    "--url", `${site.url}/`, "--scopeType", "prefix", "--workers", "2", "--collection", "dyn", "--cwd", cwd,
    "--redisDedupeUrl", redis.url, "--logLevel", "debug", "--statsFilename", join(cwd, "stats.json"),
  ], { timeoutMs: 200_000 });
  endedAt = Date.now();
  const archive = join(cwd, "collections", "dyn", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 240_000);

afterAll(async () => {
  await site?.close();
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("pages that never stop fetching", () => {
  it("are each crawled on the first attempt: every page listed, every page's document requested once", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    expect(listedPaths(join(cwd, "collections", "dyn"))).toEqual(PAGES);
    for (const page of PAGES) expect(site.requests.filter((r) => r.path === page).length, page).toBe(1);
    const stats = JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8"));
    expect(stats).toMatchObject({ crawled: PAGES.length, failed: 0, status: "done" });
    expect(crawl.stderr).not.toMatch(/did not finish within/);
  });

  it("fetch nothing after their page is done: no request from a page reaches the server after its 'page crawled'", () => {
    const crawledAt = new Map<string, number>();
    for (const line of logLines()) {
      if (line.message === "page crawled") crawledAt.set(new URL(String(line.details?.url)).pathname, Date.parse(line.timestamp));
    }
    expect([...crawledAt.keys()].sort()).toEqual(PAGES);
    for (const page of PAGES.filter((p) => p !== "/")) {
      const fromPage = site.requests.filter((r) => r.referer === `${site.url}${page}`);
      expect(fromPage.length, page).toBeGreaterThan(0);
      const late = fromPage.filter((r) => r.at > crawledAt.get(page)!);
      expect(late.map((r) => r.path), page).toEqual([]);
    }
  });

  it("reach the server no more once the crawl has ended", async () => {
    const seen = site.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(site.requests.slice(seen).map((r) => r.path)).toEqual([]);
    expect(site.requests.filter((r) => r.at > endedAt).map((r) => r.path)).toEqual([]);
  });

  it("report per page what their end cut off, in the page's timings", () => {
    const timings = logLines().filter((l) => l.message === "page timings");
    expect(timings.map((l) => new URL(String(l.details?.url)).pathname).sort()).toEqual(PAGES);
    for (const line of timings) expect(line.details?.cutAtEnd).toMatchObject({ refused: expect.any(Number), unfinished: 0 });
  });

  it("archive what they fetched while they ran: each page's polls, the image re-downloaded stored as itself", () => {
    const responses = records.filter((r) => r.headers.get("warc-type") === "response");
    const archived = (prefix: string) => responses.filter((r) => new URL(r.headers.get("warc-target-uri")!).pathname === prefix || r.headers.get("warc-target-uri")!.startsWith(site.url + prefix + "?"));
    for (const page of ["1", "2", "3"]) {
      const polls = archived("/poll-data").filter((r) => r.headers.get("warc-target-uri")!.includes(`page=${page}&`));
      expect(polls.length, `poll page ${page}`).toBeGreaterThan(0);
    }
    expect(archived("/tick").length).toBeGreaterThan(0);
    expect(archived("/rapid-data").length).toBeGreaterThan(0);
    // Each archived poll is one the server answered; none is stored twice.
    const served = new Set(site.requests.map((r) => site.url + r.path));
    const pollUris = responses.map((r) => r.headers.get("warc-target-uri")!).filter((u) => /poll-data|tick|rapid-data/.test(u));
    expect(pollUris.filter((u) => !served.has(u))).toEqual([]);
    expect(new Set(pollUris).size).toBe(pollUris.length);
    const png = responses.filter((r) => r.headers.get("warc-target-uri") === `${site.url}/same.png`);
    // Fetched by every page and again and again by /reimage: stored once.
    expect(png.length).toBe(1);
    expect(Buffer.from(png[0].payload)).toEqual(SAME_PNG);
  });
});
