import { createServer, type Server, type ServerResponse } from "node:http";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, resolveCrawlOptions } from "../../../src/config/crawlOptions.js";
import { RobotsTxt, robotsAgentOf } from "../../../src/robots/robotsTxt.js";
import { readSitemaps, type SitemapEntry, type SitemapReadCounts } from "../../../src/sitemap/sitemapReader.js";
import { parseW3cDate } from "../../../src/sitemap/w3cDate.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { SitemapClaim } from "../../../src/state/sitemapClaim.js";
import { PageAdmission, type Admission } from "../../../src/scope/admission.js";
import { SeedScope } from "../../../src/scope/seedScope.js";
import { startSitemapReading } from "../../../src/sitemap/sitemapSeeds.js";
import { Frontier } from "../../../src/frontier/frontier.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { rulesOutsideACrawl } from "../../../src/fetch/connectionRules.js";

const LOCAL_RULES = rulesOutsideACrawl();

describe("W3C dates (<lastmod>, --sitemapFromDate/--sitemapToDate)", () => {
  it.each([
    ["2024", "2024-01-01T00:00:00.000Z", "2024-12-31T23:59:59.999Z"],
    ["2024-02", "2024-02-01T00:00:00.000Z", "2024-02-29T23:59:59.999Z"],
    ["2024-03-05", "2024-03-05T00:00:00.000Z", "2024-03-05T23:59:59.999Z"],
    ["2024-03-05T12:00", "2024-03-05T12:00:00.000Z", "2024-03-05T12:00:00.000Z"],
    ["2024-03-05T12:00:30.25+02:00", "2024-03-05T10:00:30.250Z", "2024-03-05T10:00:30.250Z"],
    ["2024-03-05T23:30:00-01:00", "2024-03-06T00:30:00.000Z", "2024-03-06T00:30:00.000Z"],
  ])("%s names %s .. %s", (text, start, end) => {
    const period = parseW3cDate(text)!;
    expect([period.start.toISOString(), period.end.toISOString()]).toEqual([start, end]);
  });

  it.each(["", "yesterday", "2024-13-01", "2023-02-29", "2024-03-05 12:00", "2024-03-05T25:00", "05/03/2024"])("%j is refused", (text) => {
    expect(parseW3cDate(text)).toBeNull();
  });
});

describe("sitemap and robots flags", () => {
  const flags = { url: ["http://127.0.0.1/"] };
  it("dates become an inclusive period; a bare --useSitemap finds the sitemap itself", () => {
    expect(resolveCrawlOptions({ ...flags, useSitemap: true, sitemapFromDate: "2024-02", sitemapToDate: "2024-03-05" }).sitemap).toEqual({
      url: null, fromDate: new Date("2024-02-01T00:00:00.000Z"), toDate: new Date("2024-03-05T23:59:59.999Z"),
    });
    expect(resolveCrawlOptions({ ...flags, useSitemap: "/news-sitemap.xml" }).sitemap).toEqual({ url: "/news-sitemap.xml", fromDate: null, toDate: null });
    expect(resolveCrawlOptions(flags).sitemap).toBeNull();
    expect(resolveCrawlOptions(flags).robots).toBeNull();
  });

  it.each([
    [{ useSitemap: true, sitemapFromDate: "last week" }, /--sitemapFromDate must be an ISO date/],
    [{ sitemapToDate: "2024-01-01" }, /--sitemapToDate needs --useSitemap/],
    [{ useSitemap: true, sitemapFromDate: "2024-03-01", sitemapToDate: "2024-02-01" }, /--sitemapFromDate is after --sitemapToDate/],
    [{ useSitemap: "ftp://example.com/sitemap.xml" }, /--useSitemap must be an http\(s\) URL/],
  ])("%j is refused with a clear message", (extra, message) => {
    expect(() => resolveCrawlOptions({ ...flags, ...extra })).toThrow(OptionsError);
    expect(() => resolveCrawlOptions({ ...flags, ...extra })).toThrow(message);
  });

  it("robots.txt rules are looked up for the product token of the user agent, or --robotsAgent", () => {
    expect(resolveCrawlOptions({ ...flags, robots: true }).robots).toEqual({ agent: "warc-crawler" });
    expect(resolveCrawlOptions({ ...flags, robots: true, userAgent: "Mozilla/5.0 (compatible; ArchiveBot/2.1; +https://example.org/bot)" }).robots).toEqual({ agent: "ArchiveBot" });
    expect(resolveCrawlOptions({ ...flags, robots: true, robotsAgent: "Browsertrix" }).robots).toEqual({ agent: "Browsertrix" });
    expect(robotsAgentOf("my-archiver/1.0")).toBe("my-archiver");
    expect(robotsAgentOf("Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0")).toBe("warc-crawler");
  });
});

type Route = (res: ServerResponse) => void;

/** A local server answering from a table of path -> handler (made once its origin is known). */
async function serve(routesOf: (origin: string) => Record<string, Route>): Promise<{ origin: string; hits: Map<string, number>; server: Server }> {
  const hits = new Map<string, number>();
  let routes: Record<string, Route> = {};
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes[path];
    if (route) route(res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  routes = routesOf(origin);
  return { origin, hits, server };
}

async function collect(roots: string[], options: Parameters<typeof readSitemaps>[1] = { rules: LOCAL_RULES, userAgent: null }): Promise<{ entries: SitemapEntry[]; counts: SitemapReadCounts }> {
  const counts: SitemapReadCounts = { sitemaps: 0, failed: 0, skipped: 0 };
  const entries: SitemapEntry[] = [];
  for await (const entry of readSitemaps(roots, options, counts)) entries.push(entry);
  return { entries, counts };
}

describe("reading sitemaps", () => {
  let site: Awaited<ReturnType<typeof serve>>;
  const URLS = 50_000;
  beforeAll(async () => {
    const xml = (body: string): Route => (res) => res.writeHead(200, { "content-type": "application/xml" }).end(body);
    const big = gzipSync(
      `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
        Array.from({ length: URLS }, (_, i) => `<url><loc>http://big.test/page/${i}</loc><lastmod>2024-01-01</lastmod></url>`).join("\n") +
        `</urlset>`,
    );
    site = await serve((origin) => ({
      "/big.xml.gz": (res) => res.writeHead(200, { "content-type": "application/x-gzip" }).end(big),
      "/loop.xml": xml(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${origin}/loop.xml</loc></sitemap><sitemap><loc>${origin}/one.xml</loc></sitemap><sitemap><loc>${origin}/missing.xml</loc></sitemap><sitemap><loc>${origin}/broken.xml</loc></sitemap></sitemapindex>`),
      "/one.xml": xml(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.test/1</loc><lastmod>not a date</lastmod></url></urlset>`),
      "/broken.xml": xml(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.test/2</loc></url><url><loc>http://a.test/3</loc></urlset>`),
      "/list.txt": (res) => res.writeHead(200, { "content-type": "text/plain" }).end("\uFEFFhttp://a.test/t1\r\n\r\nnot a url\r\nhttps://a.test/t2\r\n"),
      "/page.html": (res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><html><body>hello</body></html>"),
    }));
  });
  afterAll(() => new Promise<void>((resolve) => site.server.close(() => resolve())));

  it(`streams a gzipped ${URLS}-URL sitemap entry by entry`, async () => {
    const counts: SitemapReadCounts = { sitemaps: 0, failed: 0, skipped: 0 };
    let n = 0;
    let last: SitemapEntry | null = null;
    for await (const entry of readSitemaps([`${site.origin}/big.xml.gz`], { rules: LOCAL_RULES, userAgent: null }, counts)) {
      if (n === 0) expect(entry).toEqual({ url: "http://big.test/page/0", lastmod: new Date("2024-01-01T00:00:00Z") });
      n += 1;
      last = entry;
    }
    expect(n).toBe(URLS);
    expect(last?.url).toBe(`http://big.test/page/${URLS - 1}`);
    expect(counts).toEqual({ sitemaps: 1, failed: 0, skipped: 0 });
  });

  it("reads each sitemap once, counts the ones that fail; malformed XML is read past, as far as it goes", async () => {
    // The index lists itself, a missing sitemap and one that breaks off.
    const { entries, counts } = await collect([`${site.origin}/loop.xml`]);
    expect(entries.map((e) => e.url)).toEqual(["http://a.test/1", "http://a.test/2", "http://a.test/3"]);
    expect(entries[0].lastmod).toBeNull();
    expect(counts).toEqual({ sitemaps: 4, failed: 2, skipped: 0 });
    expect(site.hits.get("/loop.xml")).toBe(1);
  });

  it("reads text sitemaps (one URL a line); a page that is no sitemap is a failure, not a crash", async () => {
    expect((await collect([`${site.origin}/list.txt`])).entries.map((e) => e.url)).toEqual(["http://a.test/t1", "https://a.test/t2"]);
    expect((await collect([`${site.origin}/page.html`])).counts).toEqual({ sitemaps: 1, failed: 1, skipped: 0 });
    expect((await collect(["http://127.0.0.1:1/sitemap.xml"], { rules: LOCAL_RULES, userAgent: null, timeoutMs: 5000 })).counts).toEqual({ sitemaps: 1, failed: 1, skipped: 0 });
  });
});

describe("robots.txt", () => {
  it("429 and 5xx disallow the host until it is asked again; 4xx allows all; redirects are followed", async () => {
    let status = 503;
    const site = await serve(() => ({
      "/robots.txt": (res) => (status === 200 ? res.writeHead(200, { "content-type": "text/plain" }).end("User-agent: *\nDisallow: /no\n") : res.writeHead(status).end()),
    }));
    try {
      const robots = new RobotsTxt({ rules: LOCAL_RULES, userAgent: null, agent: "warc-crawler", unreachableRetryMs: 200 });
      expect(await robots.check(`${site.origin}/page`)).toEqual({ allowed: false, reason: "robots.txt unreachable" });
      expect(await robots.check(`${site.origin}/other`)).toEqual({ allowed: false, reason: "robots.txt unreachable" });
      expect(site.hits.get("/robots.txt")).toBe(1);
      status = 200;
      await new Promise((r) => setTimeout(r, 250));
      expect(await robots.check(`${site.origin}/page`)).toEqual({ allowed: true });
      expect(await robots.check(`${site.origin}/no/page`)).toEqual({ allowed: false, reason: "disallowed" });
      expect(site.hits.get("/robots.txt")).toBe(2);

      status = 429;
      const throttled = new RobotsTxt({ rules: LOCAL_RULES, userAgent: null, agent: "x" });
      expect((await throttled.rulesFor(site.origin)).kind).toBe("unreachable");
      status = 410;
      const gone = new RobotsTxt({ rules: LOCAL_RULES, userAgent: null, agent: "x" });
      expect(await gone.check(`${site.origin}/no/page`)).toEqual({ allowed: true });

      // A robots.txt that redirects (http -> https, another host...) is followed; its rules apply to the host asked about.
      status = 200;
      const moved = await serve(() => ({ "/robots.txt": (res) => res.writeHead(301, { location: `${site.origin}/robots.txt` }).end() }));
      try {
        const redirected = new RobotsTxt({ rules: LOCAL_RULES, userAgent: null, agent: "x" });
        expect(await redirected.check(`${moved.origin}/no/page`)).toEqual({ allowed: false, reason: "disallowed" });
        expect(await redirected.check(`${moved.origin}/yes`)).toEqual({ allowed: true });
      } finally {
        await new Promise<void>((resolve) => moved.server.close(() => resolve()));
      }
    } finally {
      await new Promise<void>((resolve) => site.server.close(() => resolve()));
    }
  });
});

describe("robots.txt cache", () => {
  it("keeps the most recently used hosts up to its cap: memory stays bounded however many hosts a crawl meets", async () => {
    const sites = await Promise.all([1, 2, 3].map(() => serve(() => ({ "/robots.txt": (res) => res.writeHead(200, { "content-type": "text/plain" }).end("User-agent: *\nDisallow: /no\n") }))));
    try {
      const [a, b, c] = sites;
      const robots = new RobotsTxt({ rules: LOCAL_RULES, userAgent: null, agent: "x", maxOrigins: 2 });
      await robots.check(`${a.origin}/1`);
      await robots.check(`${b.origin}/1`);
      await robots.check(`${a.origin}/2`); // a is now the most recently used
      await robots.check(`${c.origin}/1`); // b goes
      expect(robots.cachedOrigins).toBe(2);
      await robots.check(`${a.origin}/3`);
      await robots.check(`${c.origin}/2`);
      expect([a, b, c].map((s) => s.hits.get("/robots.txt"))).toEqual([1, 1, 1]);
      expect(await robots.check(`${b.origin}/no/x`)).toEqual({ allowed: false, reason: "disallowed" });
      expect(b.hits.get("/robots.txt")).toBe(2); // fetched again once evicted
      expect(robots.cachedOrigins).toBe(2);
    } finally {
      for (const site of sites) await new Promise<void>((resolve) => site.server.close(() => resolve()));
    }
  });
});

describe("the sitemaps are read once per crawl", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it("one live process claims the reading; once done nobody reads again; a dead reader's claim is taken over", async () => {
    const memberA = new Membership(redis.client, "sm", "host-1-aaaa");
    const memberB = new Membership(redis.client, "sm", "host-2-bbbb");
    const a = new SitemapClaim(redis.client, memberA);
    const b = new SitemapClaim(redis.client, memberB);
    await memberA.heartbeat();
    await memberB.heartbeat();
    expect(await a.claim()).toBe("claimed");
    expect(await b.claim()).toBe("busy");
    expect(await b.inProgress()).toBe(true);
    // a dies before finishing: its heartbeat goes; the reading is unfinished (no process may commit)
    // until a live one, b, takes it over and reads to the end.
    await memberA.clearHeartbeat();
    expect(await b.state()).toBe("orphaned");
    expect(await b.inProgress()).toBe(true);
    expect(await b.claim()).toBe("claimed");
    expect(await redis.client.sismember(memberA.keys.fenced, "host-1-aaaa")).toBe(1);
    await a.finish(); // a was fenced: it no longer settles the reading
    expect(await b.state()).toBe("reading");
    await b.finish();
    expect(await a.claim()).toBe("done");
    expect(await b.claim()).toBe("done");
    expect(await a.inProgress()).toBe(false);
  });

  it("pages that cannot be queued fail the reading: the claim is let go, nobody waits for it, a rerun reads again", async () => {
    const site = await serve((origin) => ({
      "/sitemap.xml": (res) => res.writeHead(200, { "content-type": "application/xml" }).end(
        `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${origin}/a.html</loc></url><url><loc>${origin}/b.html</loc></url></urlset>`,
      ),
    }));
    try {
      const member = new Membership(redis.client, "sm-reject", "host-3-cccc");
      await member.heartbeat();
      const claim = new SitemapClaim(redis.client, member);
      // The queue refuses (Redis gone, a script error...): admit rejects.
      class RefusingAdmission extends PageAdmission {
        override async admitMany(): Promise<Admission[]> {
          throw new Error("the queue is unavailable");
        }
      }
      const reading = await startSitemapReading({ url: "/sitemap.xml", fromDate: null, toDate: null }, {
        claim, admission: new RefusingAdmission(new Frontier(redis.client, member), LOCAL_RULES.addresses, 0, null), scopes: [new SeedScope(`${site.origin}/`, { scopeType: "prefix", include: [], exclude: [], depth: -1, extraHops: 0 })],
        robotsTxt: new RobotsTxt({ rules: LOCAL_RULES, userAgent: null, agent: "x" }), stop: { requested: false }, userAgent: null, rules: LOCAL_RULES,
      });
      await reading.finished;
      expect(await claim.state()).toBe("failed");
      expect(await claim.inProgress()).toBe(false);
      expect(await claim.claim()).toBe("claimed");
    } finally {
      await new Promise<void>((resolve) => site.server.close(() => resolve()));
    }
  });
});
