// The open web against the crawler's address policy, its own fetches' deadlines, and popups (issue 15,
// items 2, 5 and 6), with the hostile site's routes of test/helpers/hostile/addresses.ts. No packet leaves
// loopback: the "forbidden" server is a second hostile site on 127.0.0.2, which the crawler is told to
// treat as link-local (CRAWLER_TEST_LINK_LOCAL); host names map to loopback addresses (CRAWLER_TEST_HOSTS)
// in the crawler and in its Chromium alike.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { listedPaths } from "../../helpers/pageLists.js";

const P = "/hostile/addresses";
let cwd: string;
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-hostile-addresses-"));
});
afterAll(() => {
  rmSync(cwd, { recursive: true, force: true });
});

interface Crawl {
  result: CliResult;
  seconds: number;
  stats: { crawled: number; failed: number; skippedRobots: number; status: string };
  /** pages.jsonl / extraPages.jsonl entries as path + query, sorted. */
  pages: string[];
  warcTargets: string[];
  logs: ReturnType<typeof logLines>;
}

async function crawl(collection: string, seeds: string[], flags: string[], env: NodeJS.ProcessEnv): Promise<Crawl> {
  const statsFile = join(cwd, `${collection}-stats.json`);
  const started = Date.now();
  const peakRss = watchPeakRss(`${cwd}\0--statsFilename\0${statsFile}`);
  const result = await runCli("crawl", [
    ...seeds.flatMap((s) => ["--url", s]), "--collection", collection, "--cwd", cwd, "--statsFilename", statsFile, "--netIdleWait", "2", "--behaviors", "", ...flags,
  ], { timeoutMs: 180_000, env });
  const seconds = (Date.now() - started) / 1000;
  const crawlerPeakRssMb = peakRss();
  expect(result.code, result.stderr.slice(-3000)).toBe(0);
  const dir = join(cwd, "collections", collection);
  const pages = listedPaths(dir, (u) => u.host.replace(/:\d+$/, "") + u.pathname + u.search);
  const archive = join(dir, "archive");
  const warcTargets = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f))).map((r) => r.headers.get("warc-target-uri") ?? "").filter(Boolean);
  // The figures the issue asks for: how long each hostile crawl took, the crawler's peak memory, the collection's size on disk.
  console.log(JSON.stringify({ crawl: collection, seconds, crawlerPeakRssMb, collectionBytes: diskBytes(dir) }));
  return { result, seconds, stats: JSON.parse(readFileSync(statsFile, "utf8")), pages, warcTargets, logs: logLines(result.stderr) };
}

const portOf = (site: FaultySite) => new URL(site.url).port;

/** Peak RSS (VmHWM) of the crawler process whose command line holds `marker`, sampled until stopped. */
function watchPeakRss(marker: string): () => number {
  let peakKb = 0;
  const sample = () => {
    for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker)) continue;
        const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
        if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      } catch {
        // the process ended meanwhile
      }
    }
  };
  const timer = setInterval(sample, 250);
  return () => {
    clearInterval(timer);
    return Math.round(peakKb / 1024);
  };
}

function diskBytes(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  return stat.isDirectory() ? readdirSync(path).reduce((sum, name) => sum + diskBytes(join(path, name)), 0) : stat.size;
}

describe("address policy (issue 15, item 6)", () => {
  let site: FaultySite;
  let forbidden: FaultySite;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    site = await startFaultySite(1, {});
    forbidden = await startFaultySite(1, {}, "127.0.0.2");
    env = {
      CRAWLER_TEST_HOSTS: `evil.test=127.0.0.2,metadata.google.internal=127.0.0.2,robots-to-${portOf(forbidden)}.test=127.0.0.1`,
      CRAWLER_TEST_LINK_LOCAL: "127.0.0.2/32",
    };
  });
  afterAll(async () => {
    await Promise.all([site.close(), forbidden.close()]);
  });

  it("links, subresources, redirect hops, robots.txt and sitemaps never reach a link-local address; nothing of it is queued or archived", async () => {
    const to = portOf(forbidden);
    const seed = `${site.url}${P}/forbidden-links?to=${to}`;
    const result = await crawl("forbidden", [seed], [
      "--scopeType", "any", "--depth", "1", "--workers", "2", "--robots", "--useSitemap", `${site.url}${P}/sitemap-index.xml?to=${to}`,
    ], env);

    // The server on the forbidden address received nothing at all: no page, no image, no frame, no
    // fetch(), no redirect target, no robots.txt, no sitemap.
    expect(Object.fromEntries(forbidden.hits)).toEqual({});
    // Crawled: the seed, the allowed page that redirects (its 302 is the allowed host's answer), the page the sitemap lists there.
    expect(result.pages).toEqual([`127.0.0.1${P}/forbidden-links?to=${to}`, `127.0.0.1${P}/listed-page`, `127.0.0.1${P}/redirect-out?to=${to}`]);
    expect(result.warcTargets.filter((u) => /evil\.test|127\.0\.0\.2|metadata|::ffff|7f00|file:|javascript:|data:/.test(u))).toEqual([]);
    expect(result.warcTargets).toContain(`${site.url}${P}/redirect-out?to=${to}`);

    // Links to forbidden addresses never entered the queue (by name after resolution, by address,
    // IPv4-mapped, metadata name; from the page and from a sitemap): the queue only ever held the 3 pages
    // above, and the refusal is logged once per host.
    expect(result.stats).toMatchObject({ crawled: 3, failed: 0, total: 3, status: "done" });
    const refused = result.logs.filter((l) => l.context === "scope" && l.message.startsWith("page not crawled: its address")).map((l) => [new URL(l.details.url as string).host, l.details.reason]);
    expect(refused.sort()).toEqual([
      [`127.0.0.2:${to}`, "127.0.0.2, a link-local address"],
      [`[::ffff:7f00:2]:${to}`, "::ffff:7f00:2, a link-local address"],
      [`evil.test:${to}`, "evil.test resolves to 127.0.0.2, a link-local address"],
      [`metadata.google.internal:${to}`, "metadata.google.internal is a cloud metadata service"],
    ].sort());
    // In the browser: the subresources and the redirect hop were stopped before they were sent.
    const blocked = result.logs.filter((l) => l.context === "capture" && l.message.startsWith("request blocked")).map((l) => l.details.url as string);
    expect([...new Set(blocked)].sort()).toEqual([
      `http://127.0.0.2:${to}${P}/frame`, `http://evil.test:${to}${P}/behind-redirect`, `http://evil.test:${to}${P}/pixel.png`, `http://evil.test:${to}${P}/xhr`,
    ]);
    // robots.txt of an allowed host redirected to the forbidden one: unreachable, so that host's page is skipped.
    expect(result.stats.skippedRobots).toBe(1);
    expect(result.logs.find((l) => l.context === "robots" && l.message.startsWith("robots.txt unreachable"))?.details).toMatchObject({
      url: `http://robots-to-${to}.test:${portOf(site)}/robots.txt`, error: `not fetched: evil.test resolves to 127.0.0.2, a link-local address`,
    });
    // A child sitemap on the forbidden host and one redirected there: not read; a page listed there: not queued.
    expect(result.logs.find((l) => l.context === "sitemap" && l.message === "sitemaps read")?.details).toMatchObject({
      found: 2, queued: 1, forbiddenAddress: 1, sitemaps: 4, failedSitemaps: 2,
    });
  });

  it("--allowAddresses lets the same page reach that address (the test above would see any request)", async () => {
    const to = portOf(forbidden);
    const result = await crawl("allowed", [`${site.url}${P}/forbidden-links?to=${to}`], ["--scopeType", "any", "--depth", "0", "--allowAddresses", "127.0.0.2"], env);
    expect(Object.fromEntries(forbidden.hits)).toEqual({ [`${P}/pixel.png`]: 1, [`${P}/frame`]: 1, [`${P}/xhr`]: 1 });
    expect(result.warcTargets).toContain(`http://evil.test:${to}${P}/pixel.png`);
    forbidden.hits.clear();
  });
});

describe("slow drips (issue 15, item 2)", () => {
  let site: FaultySite;
  /** The hostile site on 127.0.0.3, whose robots.txt drips one byte a second for as long as it is read. */
  let dripSite: FaultySite;
  beforeAll(async () => {
    site = await startFaultySite(1, {});
    dripSite = await startFaultySite(1, {}, "127.0.0.3");
  });
  afterAll(async () => {
    await Promise.all([site.close(), dripSite.close()]);
  });

  it("a robots.txt sent one byte a second holds neither the workers nor the sitemap reading: unreachable at its deadline, the crawl ends", async () => {
    // One seed on the dripping host, one linking to it; --useSitemap asks the dripping robots.txt for Sitemap: lines too.
    const result = await crawl("drip", [`${site.url}${P}/drip-links?to=${portOf(dripSite)}`, `${dripSite.url}/`], [
      "--scopeType", "any", "--depth", "1", "--workers", "2", "--robots", "--useSitemap",
    ], {});
    expect(result.pages).toEqual([`127.0.0.1${P}/drip-links?to=${portOf(dripSite)}`]);
    // No page of the dripping host was loaded; its robots.txt was asked for once, and the sitemap reading
    // went on past it (no Sitemap: lines known, so /sitemap.xml, which is not there).
    expect(Object.fromEntries(dripSite.hits)).toEqual({ "/robots.txt": 1, "/sitemap.xml": 1 });
    expect(result.logs.find((l) => l.context === "robots" && l.details.url === `${dripSite.url}/robots.txt`)?.details).toMatchObject({
      status: null, error: `${dripSite.url}/robots.txt not read within 10s`,
    });
    expect(result.stats).toMatchObject({ crawled: 1, skippedRobots: 2, status: "done" });
    // The deadline is 10 s; the rest is starting Chromium and the crawl. Generous: it must end, not hang.
    expect(result.seconds).toBeLessThan(120);
  });
});

describe("popups (issue 15, item 5)", () => {
  let site: FaultySite;
  beforeAll(async () => {
    site = await startFaultySite(3, {});
  });
  afterAll(async () => {
    await site.close();
  });

  it("windows a page opens are never left open (no polling behind the crawl's back) and their URLs are crawled as its links", async () => {
    const result = await crawl("popups", [`${site.url}${P}/popups`], ["--scopeType", "host", "--workers", "1"], {});
    // Popups poll the site every 250 ms from 2 s after they open (loaded as pages, they do not).
    // window.open opens nothing: no poll, and each of those URLs was requested once, as the page it became.
    for (const n of [1, 2, 3]) {
      expect(site.hits.get(`${P}/popup-poll-${n}`), `popup-poll-${n}`).toBeUndefined();
      expect(site.hits.get(`${P}/popup-${n}`), `popup-${n}`).toBe(1);
    }
    // A window opened by a link with a target is closed as soon as puppeteer has attached to it (well
    // within its 2 s): never polled, though its first request may have gone out.
    expect(site.hits.get(`${P}/popup-poll-4`)).toBeUndefined();
    expect(site.hits.get(`${P}/popup-4`)).toBeGreaterThanOrEqual(1);
    expect(site.hits.get(`${P}/popup-4`)).toBeLessThanOrEqual(2);
    expect(result.pages).toEqual(["127.0.0.1/", "127.0.0.1/page/1", "127.0.0.1/page/2", "127.0.0.1/page/3", ...[1, 2, 3, 4].map((n) => `127.0.0.1${P}/popup-${n}`), `127.0.0.1${P}/popups`, `127.0.0.1${P}/own-open`].sort());
    const opened = result.logs.filter((l) => l.context === "browser" && l.message.startsWith("the page opened windows"));
    expect(opened.map((l) => l.details)).toEqual([{ url: `${site.url}${P}/popups`, windows: 4, closed: 1 }]);
    expect(result.stats).toMatchObject({ crawled: 10, failed: 0, status: "done" });
  });
});
