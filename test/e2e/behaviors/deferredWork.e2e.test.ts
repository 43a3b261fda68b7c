import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFERRED_PAGES, startDeferredWorkSite, type DeferredWorkSite } from "../../../fixtures/deferredWorkSite.js";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// The end of a page on the defaults (behaviors on), one crawl of three pages:
// - a toolbar the page sends for TOOLBAR_DELAY_MS after its load event (a script, which adds an image): a page
//   otherwise done within a second of its load still waits for work it put off that briefly, and for what it
//   sent for (JD's toolbar on the real web);
// - a timeout a moment after the load whose handler is busy a while (no timer, no request), then fetches, and fetches
//   again a moment after the answer: a page whose deferred work just ran is not taken for settled;
// - a tall iframe of no size (a login channel): nothing to scroll there;
// - an image whose srcset names a second candidate, fetched by the behaviors' autofetch, which the page's end
//   does not wait on but still captures.
let site: DeferredWorkSite;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
const PAGES = [DEFERRED_PAGES.toolbar.path, DEFERRED_PAGES.busy.path, DEFERRED_PAGES.hiddenFrame.path, DEFERRED_PAGES.srcset.path];

const responsesOf = (path: string) =>
  records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === site.url + path).map(httpStatus);
const logLines = (message: string) =>
  crawl.stderr.split("\n").filter((l) => l.includes(`"${message}"`)).map((l) => JSON.parse(l).details as Record<string, unknown>);

beforeAll(async () => {
  [site, redis] = await Promise.all([startDeferredWorkSite(), startTestRedis()]);
  cwd = mkdtempSync(join(tmpdir(), "crawl-deferred-work-"));
  crawl = await runCli("crawl", [...PAGES.flatMap((path) => ["--url", site.url + path]), "--scopeType", "page", "--collection", "later", "--cwd", cwd,
    "--redisDedupeUrl", redis.url, "--logLevel", "debug", "--context", "behavior,behaviorScript,page"], { timeoutMs: 100_000 });
  const archive = join(cwd, "collections", "later", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 120_000);

afterAll(async () => {
  await Promise.all([site?.close(), redis?.stop()]);
  rmSync(cwd, { recursive: true, force: true });
});

describe("what a page does after it seems done", () => {
  it("crawls every page", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    expect(listedPaths(join(cwd, "collections", "later"))).toEqual([...PAGES].sort());
  });

  it("waits for the toolbar a page put off until after its load, and stores the script and the image it brought", () => {
    for (const file of DEFERRED_PAGES.toolbar.files) expect(responsesOf(file), file).toEqual([200]);
  });

  it("waits for what work a page put off sends for once it has run a while, and for what the answer's handler sends for", () => {
    for (const file of DEFERRED_PAGES.busy.files) expect(responsesOf(file), file).toEqual([200]);
  });

  it("does not scroll a frame hidden from view, and stores it", () => {
    const frameUrl = site.url + DEFERRED_PAGES.hiddenFrame.frame;
    expect(responsesOf(DEFERRED_PAGES.hiddenFrame.frame)).toEqual([200]);
    expect(logLines("autoscroll ended").filter((d) => d.frameUrl === frameUrl)).toEqual([]);
  });

  it("stores every srcset candidate, the one the behaviors fetched too", () => {
    for (const file of DEFERRED_PAGES.srcset.files) expect(responsesOf(file), file).toEqual([200]);
    // The page shows one of them; the other is the behaviors' fetch.
    for (const file of DEFERRED_PAGES.srcset.files) expect(site.requests.filter((r) => r.path === file).length, file).toBeGreaterThanOrEqual(1);
  });
});
