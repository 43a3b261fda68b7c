// Issue 15, items 7-9, against the hostile site: seeds that redirect, one page under many URLs, and
// servers that answer "too many requests". Real Chromium, real redis-server (embedded), real HTTP.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { pacingLog, pacingRequests } from "../../helpers/hostile/pacing.js";
import { startTestRedis } from "../../helpers/redis.js";
import { httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

const P = "/hostile/pacing";
let cwd: string;
let site: FaultySite;
let port: string;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-hostile-urls-"));
  site = await startFaultySite(1, {});
  port = new URL(site.url).port;
});
afterAll(async () => {
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
});

interface Stats {
  crawled: number;
  failed: number;
  failedAttempts: number;
  rateLimited: number;
  queued: number;
  pending: number;
  status: string;
}

interface Crawl {
  result: CliResult;
  stats: Stats;
  /** pages.jsonl and extraPages.jsonl entries (headers left out). */
  seeds: { url: string; status: number; seed: boolean; depth: number }[];
  others: { url: string; status: number; seed: boolean; depth: number }[];
  records: RawRecord[];
  seconds: number;
}

async function crawl(name: string, seed: string, flags: string[] = []): Promise<Crawl> {
  const statsFile = join(cwd, `${name}.json`);
  const started = Date.now();
  const result = await runCli(
    "crawl",
    ["--url", seed, "--cwd", cwd, "--collection", name, "--statsFilename", statsFile, "--netIdleWait", "1", ...NO_BEHAVIORS, ...flags],
    { timeoutMs: 170_000 },
  );
  const seconds = (Date.now() - started) / 1000;
  const dir = join(cwd, "collections", name);
  const pages = (file: string) =>
    existsSync(join(dir, "pages", file)) ? readFileSync(join(dir, "pages", file), "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l) as Crawl["seeds"][number]) : [];
  const records = readdirSync(join(dir, "archive")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
  return { result, stats: JSON.parse(readFileSync(statsFile, "utf8")) as Stats, seeds: pages("pages.jsonl"), others: pages("extraPages.jsonl"), records, seconds };
}

/** The target URIs of the response records, sorted (the URLs the archive holds pages and resources under). */
function responseUrls(records: RawRecord[]): string[] {
  return records.filter((r) => r.headers.get("warc-type") === "response").map((r) => r.headers.get("warc-target-uri")!).sort();
}

describe("seeds that redirect (issue 15, item 7)", () => {
  it("http://seed/ -> http://www.seed/: the www. host is the seed's own scope; both URLs are listed as the seed", async () => {
    const seed = `http://seed.localhost:${port}${P}/moved-www`;
    const www = `http://www.seed.localhost:${port}${P}/site/`;
    const { result, stats, seeds, others, records } = await crawl("moved-www", seed);
    expect(result.code).toBe(0);
    expect(stats).toMatchObject({ crawled: 3, failed: 0, queued: 0, pending: 0, status: "done" });
    expect(seeds.map((p) => p.url)).toEqual([seed, www]);
    expect(seeds.every((p) => p.seed && p.depth === 0 && p.status === 200)).toBe(true);
    // The front page links to itself and its pages link back to it: it is not crawled a second time.
    expect(others.map((p) => p.url).sort()).toEqual([`${www}a`, `${www}b`]);
    expect(responseUrls(records)).toEqual([seed, www, `${www}a`, `${www}b`].sort());
  }, 180_000);

  it("a seed that redirects to another host: without --addRedirectedSeeds only the seed page, with it the other host's site", async () => {
    const seed = `http://seed.localhost:${port}${P}/moved-away`;
    const other = `http://other.localhost:${port}${P}/site/`;

    const alone = await crawl("moved-away", seed);
    expect(alone.result.code).toBe(0);
    expect(alone.stats).toMatchObject({ crawled: 1, failed: 0, status: "done" });
    expect(alone.seeds.map((p) => p.url)).toEqual([seed, other]);
    expect(alone.others).toEqual([]);
    expect(logLines(alone.result.stderr).some((l) => l.message.startsWith("seed page redirected out of its scope: not added"))).toBe(true);

    const added = await crawl("moved-away-added", seed, ["--addRedirectedSeeds"]);
    expect(added.result.code).toBe(0);
    expect(added.stats).toMatchObject({ crawled: 3, failed: 0, queued: 0, pending: 0, status: "done" });
    expect(added.seeds.map((p) => p.url)).toEqual([seed, other]);
    expect(added.seeds.every((p) => p.seed && p.depth === 0 && p.status === 200)).toBe(true);
    expect(added.others.map((p) => p.url).sort()).toEqual([`${other}a`, `${other}b`]);
    expect(added.others.every((p) => !p.seed && p.depth === 1)).toBe(true);
    expect(responseUrls(added.records)).toEqual([seed, other, `${other}a`, `${other}b`].sort());
    const note = logLines(added.result.stderr).find((l) => l.message.startsWith("seed page redirected out of its scope: its redirect target is added"));
    expect(note?.details).toMatchObject({ url: seed, redirectedTo: other, newSeedId: 1 });
  }, 180_000);
});

describe("one page, many URLs (issue 15, item 8)", () => {
  const base = () => `${site.url}${P}`;

  it("query order, an empty query or empty parameters, and fragments do not make another page; the URL found first is the one archived", async () => {
    const { result, stats, others, records } = await crawl("twins", `${base()}/twins`);
    expect(result.code).toBe(0);
    // Met first as ?b=2&a=1 and /plain?: loaded and archived so, not as their keys.
    const expected = [`${base()}/item?b=2&a=1`, `${base()}/plain?`, `${base()}/frag`];
    expect(stats).toMatchObject({ crawled: 1 + expected.length, failed: 0, status: "done" });
    expect(others.map((p) => p.url).sort()).toEqual([...expected].sort());
    expect(responseUrls(records)).toEqual([`${base()}/twins`, ...expected].sort());
  }, 180_000);

  it("with --allowHashUrls, URLs with other fragments are other pages (their document archived once)", async () => {
    const { result, stats, others, records } = await crawl("twins-hash", `${base()}/twins`, ["--allowHashUrls"]);
    expect(result.code).toBe(0);
    const pages = [`${base()}/item?b=2&a=1`, `${base()}/item?a=1&b=2#part`, `${base()}/plain?`, `${base()}/frag#one`, `${base()}/frag#two`, `${base()}/frag`];
    expect(stats).toMatchObject({ crawled: 1 + pages.length, failed: 0, status: "done" });
    expect(others.map((p) => p.url).sort()).toEqual([...pages].sort());
    expect(others.every((p) => p.status === 200)).toBe(true);
    expect(responseUrls(records)).toEqual([`${base()}/twins`, `${base()}/item?b=2&a=1`, `${base()}/item?a=1&b=2`, `${base()}/plain?`, `${base()}/frag`].sort());
  }, 180_000);
});

describe("rate limits (issue 15, item 9)", () => {
  it("429 with Retry-After: 2, then 200: archived once, with the 200, after the server's wait; the 429 is not a crawled page", async () => {
    const url = `${site.url}${P}/busy`;
    const { result, stats, seeds, records } = await crawl("busy", url);
    expect(result.code).toBe(0);
    expect(stats).toMatchObject({ crawled: 1, failed: 0, failedAttempts: 0, rateLimited: 1, queued: 0, pending: 0, status: "done" });
    const times = pacingLog(site.url, `${P}/busy`);
    expect(times).toHaveLength(2);
    // The crawler's clock starts when the 429 arrives, after the server sent it: the gap is at least 2 s.
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(2000);
    const responses = records.filter((r) => r.headers.get("warc-type") === "response");
    expect(responses.map((r) => [r.headers.get("warc-target-uri"), httpStatus(r)])).toEqual([[url, 200]]);
    expect(records.some((r) => r.payload.includes("Too many requests"))).toBe(false);
    expect(seeds.map((p) => [p.url, p.status])).toEqual([[url, 200]]);
    // The 429 page was never rendered: its image and link were not fetched.
    expect(site.hits.get(`${P}/never-loaded.png`) ?? 0).toBe(0);
    expect(site.hits.get(`${P}/never-linked`) ?? 0).toBe(0);
  }, 180_000);

  it("a page that always answers 429: failed after --rateLimitMaxRetries, nothing of it archived, and the crawl ends", async () => {
    const start = `${site.url}${P}/busy-links`;
    const busy = `${site.url}${P}/always-busy`;
    const { result, stats, seeds, others, records, seconds } = await crawl("always-busy", start, ["--rateLimitMaxRetries", "2"]);
    expect(result.code).toBe(0);
    expect(stats).toMatchObject({ crawled: 1, failed: 1, failedAttempts: 0, rateLimited: 3, queued: 0, pending: 0, status: "done" });
    const times = pacingLog(site.url, `${P}/always-busy`);
    expect(times).toHaveLength(3);
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(1000);
    expect(seeds.map((p) => p.url)).toEqual([start]);
    expect(others).toEqual([]);
    expect(responseUrls(records)).toEqual([start]);
    const failed = logLines(result.stderr).find((l) => l.message === "page failed: rate limited on every try");
    expect(failed?.details).toMatchObject({ url: busy, status: 429 });
    console.log(JSON.stringify({ bench: "always-429 crawl", seconds }));
  }, 180_000);

  it("two processes on one crawl: after one gets a 429 (Retry-After: 8), no worker of either starts a page on that host until it has passed", async () => {
    const redis = await startTestRedis();
    try {
      const flags = ["--crawlId", "crowd", "--redisStoreUrl", redis.url, "--workers", "2", "--netIdleWait", "1", "--logLevel", "debug", ...NO_BEHAVIORS];
      const run = (n: number) =>
        runCli("crawl", ["--url", `${site.url}${P}/crowd`, "--cwd", join(cwd, `crowd-${n}`), "--collection", "crowd", "--statsFilename", join(cwd, `crowd-${n}.json`), ...flags], { timeoutMs: 170_000 });
      const results = await Promise.all([run(1), run(2)]);
      expect(results.map((r) => r.code)).toEqual([0, 0]);
      const [first, second] = pacingLog(site.url, `${P}/crowd/1`);
      expect(second - first).toBeGreaterThanOrEqual(8000);
      // Until the server's 8 s are over, the host gets only page loads that had their turn before the
      // crawler backed the host off (they were under way when the 429 came), whichever process the
      // workers are in (a wait over 5 s puts the pages back in the queue, due then, rather than holding
      // the workers: 8 s leaves a worker 3 s to ask, its tab made ready first; with 6 s a loaded machine let
      // every worker ask too late to be put back). Judged by the crawlers' own log, not by a guess at how
      // long a load takes to arrive.
      const lines = results.flatMap((r) => logLines(r.stderr));
      const backedOffAt = Date.parse(lines.find((l) => l.message.startsWith("page rate limited"))!.timestamp);
      const startedAt = (path: string) => Math.min(...lines.filter((l) => l.message === "loading page" && l.details.url === `${site.url}${path}`).map((l) => Date.parse(l.timestamp)));
      const during = pacingRequests(site.url, /^\/hostile\/pacing\/crowd\/\d$/).filter((r) => r.at > first && r.at < first + 8000);
      // 100 ms: a turn granted a moment before the back-off may be logged a moment after its warning.
      expect(during.filter((r) => startedAt(r.path) > backedOffAt + 100)).toEqual([]);
      const deferred = results.flatMap((r) => logLines(r.stderr)).filter((l) => l.message === "host backed off: page put back until its turn");
      expect(deferred.length).toBeGreaterThan(0);
      const stats = [1, 2].map((n) => JSON.parse(readFileSync(join(cwd, `crowd-${n}.json`), "utf8")) as Stats);
      for (const s of stats) expect(s).toMatchObject({ crawled: 9, failed: 0, rateLimited: 1, queued: 0, pending: 0, status: "done" });
      // Each crowd page was crawled once, by one process or the other.
      for (let i = 1; i <= 8; i++) expect(pacingLog(site.url, `${P}/crowd/${i}`)).toHaveLength(i === 1 ? 2 : 1);
    } finally {
      await redis.stop();
    }
  }, 180_000);

  it("a seed that is only ever rate limited fails the crawl (exit 9, no page crawled) and says why", async () => {
    const busy = `${site.url}${P}/always-busy`;
    const { result, stats } = await crawl("always-busy-seed", busy, ["--rateLimitMaxRetries", "1"]);
    expect(result.code).toBe(9);
    expect(stats).toMatchObject({ crawled: 0, failed: 1, rateLimited: 2, status: "failed" });
    expect(result.stderr.trim().split("\n").pop()).toContain(`no page could be crawled: ${busy} failed: rate limited: HTTP 429`);
  }, 180_000);
});
