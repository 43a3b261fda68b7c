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

async function crawl(name: string, seeds: string[], flags: string[] = []): Promise<Crawl> {
  const statsFile = join(cwd, `${name}.json`);
  const started = Date.now();
  const result = await runCli(
    "crawl",
    [...seeds.flatMap((seed) => ["--url", seed]), "--cwd", cwd, "--collection", name, "--statsFilename", statsFile, "--netIdleWait", "1", ...NO_BEHAVIORS, ...flags],
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

/** The entries whose URL starts with one of `prefixes`. */
function under<T extends { url: string }>(entries: T[], ...prefixes: string[]): T[] {
  return entries.filter((e) => prefixes.some((p) => e.url.startsWith(p)));
}
const urlsUnder = (urls: string[], ...prefixes: string[]) => urls.filter((u) => prefixes.some((p) => u.startsWith(p)));
/** The URLs of the pages a crawl logged as crawled (a redirected seed under its seed URL), under `prefixes`. */
const crawledUnder = (crawl: Crawl, ...prefixes: string[]) =>
  urlsUnder(logLines(crawl.result.stderr).filter((l) => l.message === "page crawled").map((l) => String(l.details.url)), ...prefixes).sort();
/** The URLs of the crawl's "page rate limited" warnings (an answer after which the page is tried again). */
const rateLimitedUrls = (crawl: Crawl) => logLines(crawl.result.stderr).filter((l) => l.message.startsWith("page rate limited")).map((l) => String(l.details.url));

// Two crawls serve the redirect, twin-URL and single-process rate-limit cases: one on the defaults (with
// --rateLimitMaxRetries 2, which only the always-429 page reaches), one with --addRedirectedSeeds and
// --allowHashUrls (the redirect site has no fragments; the twins page has no redirect). Each case has a host
// of its own (names under .localhost reach the same site), so its pages, archive records and a host's back-off
// are told apart: seed.localhost (redirecting seeds), 127.0.0.1 (twins), busy.localhost and links.localhost
// (the rate limits). They run in order: the rate-limit cases read the site's request log by path.
let shared: Crawl;
let flagged: Crawl;
const host = (name: string) => `http://${name}:${port}`;
const movedWww = () => `${host("seed.localhost")}${P}/moved-www`;
const www = () => `${host("www.seed.localhost")}${P}/site/`;
const movedAway = () => `${host("seed.localhost")}${P}/moved-away`;
const other = () => `${host("other.localhost")}${P}/site/`;
const twins = () => `${site.url}${P}/twins`;
const busy = () => `${host("busy.localhost")}${P}/busy`;
const busyLinks = () => `${host("links.localhost")}${P}/busy-links`;

describe("crawls on shared flags", () => {
  beforeAll(async () => {
    shared = await crawl("shared", [movedWww(), movedAway(), twins(), busy(), busyLinks()], ["--rateLimitMaxRetries", "2"]);
    flagged = await crawl("flagged", [movedAway(), twins()], ["--addRedirectedSeeds", "--allowHashUrls"]);
  }, 240_000);

  it("both end cleanly, every page counted: the shared crawl's rate limits (1 for /busy, 3 for /always-busy) and its one failure", () => {
    expect(shared.result.code, shared.result.stderr.slice(-3000)).toBe(0);
    // moved-www 3, moved-away 1, twins 1 + 3, busy 1, busy-links 1 (always-busy failed).
    expect(shared.stats).toMatchObject({ crawled: 10, failed: 1, failedAttempts: 0, rateLimited: 4, queued: 0, pending: 0, status: "done" });
    expect(flagged.result.code, flagged.result.stderr.slice(-3000)).toBe(0);
    // moved-away with its redirect target's site 3, twins 1 + 6.
    expect(flagged.stats).toMatchObject({ crawled: 10, failed: 0, queued: 0, pending: 0, status: "done" });
  });

  describe("seeds that redirect (issue 15, item 7)", () => {
    it("http://seed/ -> http://www.seed/: the www. host is the seed's own scope; both URLs are listed as the seed", () => {
      const { seeds, others, records } = shared;
      expect(crawledUnder(shared, movedWww(), www())).toEqual([movedWww(), `${www()}a`, `${www()}b`].sort());
      const mine = under(seeds, movedWww(), www());
      expect(mine.map((p) => p.url)).toEqual([movedWww(), www()]);
      expect(mine.every((p) => p.seed && p.depth === 0 && p.status === 200)).toBe(true);
      // The front page links to itself and its pages link back to it: it is not crawled a second time.
      expect(under(others, movedWww(), www()).map((p) => p.url).sort()).toEqual([`${www()}a`, `${www()}b`]);
      expect(urlsUnder(responseUrls(records), movedWww(), host("www.seed.localhost"))).toEqual([movedWww(), www(), `${www()}a`, `${www()}b`].sort());
    });

    it("a seed that redirects to another host: without --addRedirectedSeeds only the seed page, with it the other host's site", () => {
      const alone = shared;
      expect(crawledUnder(alone, movedAway(), host("other.localhost"))).toEqual([movedAway()]);
      expect(under(alone.seeds, movedAway(), host("other.localhost")).map((p) => p.url)).toEqual([movedAway(), other()]);
      expect(under(alone.others, movedAway(), host("other.localhost"))).toEqual([]);
      expect(urlsUnder(responseUrls(alone.records), movedAway(), host("other.localhost"))).toEqual([movedAway(), other()].sort());
      expect(logLines(alone.result.stderr).some((l) => l.message.startsWith("seed page redirected out of its scope: not added") && l.details.url === movedAway())).toBe(true);

      const added = flagged;
      expect(crawledUnder(added, movedAway(), host("other.localhost"))).toEqual([movedAway(), `${other()}a`, `${other()}b`].sort());
      const addedSeeds = under(added.seeds, movedAway(), host("other.localhost"));
      expect(addedSeeds.map((p) => p.url)).toEqual([movedAway(), other()]);
      expect(addedSeeds.every((p) => p.seed && p.depth === 0 && p.status === 200)).toBe(true);
      const addedOthers = under(added.others, movedAway(), host("other.localhost"));
      expect(addedOthers.map((p) => p.url).sort()).toEqual([`${other()}a`, `${other()}b`]);
      expect(addedOthers.every((p) => !p.seed && p.depth === 1)).toBe(true);
      expect(urlsUnder(responseUrls(added.records), movedAway(), host("other.localhost"))).toEqual([movedAway(), other(), `${other()}a`, `${other()}b`].sort());
      const note = logLines(added.result.stderr).find((l) => l.message.startsWith("seed page redirected out of its scope: its redirect target is added"));
      // Two seeds given (ids 0 and 1): the redirect target is the third.
      expect(note?.details).toMatchObject({ url: movedAway(), redirectedTo: other(), seedId: 0, newSeedId: 2 });
    });
  });

  describe("one page, many URLs (issue 15, item 8)", () => {
    const base = () => `${site.url}${P}`;

    it("query order, an empty query or empty parameters, and fragments do not make another page; the URL found first is the one archived", () => {
      const { seeds, others, records } = shared;
      // Met first as ?b=2&a=1 and /plain?: loaded and archived so, not as their keys.
      const expected = [`${base()}/item?b=2&a=1`, `${base()}/plain?`, `${base()}/frag`];
      expect(crawledUnder(shared, base())).toEqual([twins(), ...expected].sort());
      expect(under(seeds, base()).map((p) => p.url)).toEqual([twins()]);
      expect(under(others, base()).map((p) => p.url).sort()).toEqual([...expected].sort());
      expect(urlsUnder(responseUrls(records), base())).toEqual([twins(), ...expected].sort());
    });

    it("with --allowHashUrls, URLs with other fragments are other pages (their document archived once)", () => {
      const { seeds, others, records } = flagged;
      const pages = [`${base()}/item?b=2&a=1`, `${base()}/item?a=1&b=2#part`, `${base()}/plain?`, `${base()}/frag#one`, `${base()}/frag#two`, `${base()}/frag`];
      expect(crawledUnder(flagged, base())).toEqual([twins(), ...pages].sort());
      expect(under(seeds, base()).map((p) => p.url)).toEqual([twins()]);
      const mine = under(others, base());
      expect(mine.map((p) => p.url).sort()).toEqual([...pages].sort());
      expect(mine.every((p) => p.status === 200)).toBe(true);
      expect(urlsUnder(responseUrls(records), base())).toEqual([twins(), `${base()}/item?b=2&a=1`, `${base()}/item?a=1&b=2`, `${base()}/plain?`, `${base()}/frag`].sort());
    });
  });

  describe("rate limits (issue 15, item 9)", () => {
    it("429 with Retry-After: 2, then 200: archived once, with the 200, after the server's wait; the 429 is not a crawled page", () => {
      const { seeds, records } = shared;
      const url = busy();
      expect(crawledUnder(shared, host("busy.localhost"))).toEqual([url]);
      expect(rateLimitedUrls(shared).filter((u) => u === url)).toHaveLength(1);
      const times = pacingLog(site.url, `${P}/busy`);
      expect(times).toHaveLength(2);
      // The crawler's clock starts when the 429 arrives, after the server sent it: the gap is at least 2 s.
      expect(times[1] - times[0]).toBeGreaterThanOrEqual(2000);
      const responses = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri")!.startsWith(host("busy.localhost")));
      expect(responses.map((r) => [r.headers.get("warc-target-uri"), httpStatus(r)])).toEqual([[url, 200]]);
      expect(records.some((r) => r.payload.includes("Too many requests"))).toBe(false);
      expect(under(seeds, host("busy.localhost")).map((p) => [p.url, p.status])).toEqual([[url, 200]]);
      // The 429 page was never rendered: its image and link were not fetched.
      expect(site.hits.get(`${P}/never-loaded.png`) ?? 0).toBe(0);
      expect(site.hits.get(`${P}/never-linked`) ?? 0).toBe(0);
    });

    it("a page that always answers 429: failed after --rateLimitMaxRetries, nothing of it archived, and the crawl ends", () => {
      const { result, seeds, others, records, seconds } = shared;
      const start = busyLinks();
      const failedUrl = `${host("links.localhost")}${P}/always-busy`;
      expect(crawledUnder(shared, host("links.localhost"))).toEqual([start]);
      // Tried three times: two answers put it back, the third fails it.
      expect(rateLimitedUrls(shared).filter((u) => u === failedUrl)).toHaveLength(2);
      const times = pacingLog(site.url, `${P}/always-busy`);
      expect(times).toHaveLength(3);
      for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(1000);
      expect(under(seeds, host("links.localhost")).map((p) => p.url)).toEqual([start]);
      expect(under(others, host("links.localhost"))).toEqual([]);
      expect(urlsUnder(responseUrls(records), host("links.localhost"))).toEqual([start]);
      const failed = logLines(result.stderr).filter((l) => l.message === "page failed: rate limited on every try");
      expect(failed.map((l) => l.details)).toMatchObject([{ url: failedUrl, status: 429 }]);
      console.log(JSON.stringify({ bench: "shared crawl (always-429 page among 10)", seconds }));
    });
  });
});

describe("rate limits (issue 15, item 9), crawls of their own", () => {
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
    const alwaysBusy = `${site.url}${P}/always-busy`;
    const { result, stats } = await crawl("always-busy-seed", [alwaysBusy], ["--rateLimitMaxRetries", "1"]);
    expect(result.code).toBe(9);
    expect(stats).toMatchObject({ crawled: 0, failed: 1, rateLimited: 2, status: "failed" });
    expect(result.stderr.trim().split("\n").pop()).toContain(`no page could be crawled: ${alwaysBusy} failed: rate limited: HTTP 429`);
  }, 180_000);
});
