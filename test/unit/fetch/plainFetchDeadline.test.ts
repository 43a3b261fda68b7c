// The crawler's own fetches (robots.txt, sitemaps) end by a total deadline, however steadily a server
// drips bytes: an idle timeout alone is reset by each byte and never fires.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FetchDeadlineError, plainFetch, readText } from "../../../src/fetch/plainFetch.js";
import { RobotsTxt } from "../../../src/robots/robotsTxt.js";
import { readSitemaps } from "../../../src/sitemap/sitemapReader.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { rulesOutsideACrawl } from "../../../src/fetch/connectionRules.js";

const LOCAL_RULES = rulesOutsideACrawl();

let site: FaultySite;
/** The hostile site on 127.0.0.3, whose robots.txt drips. */
let dripSite: FaultySite;

beforeAll(async () => {
  site = await startFaultySite(1, {});
  dripSite = await startFaultySite(1, {}, "127.0.0.3");
});
afterAll(async () => {
  await Promise.all([site.close(), dripSite.close()]);
});

describe("slow drips", () => {
  it("a body dripping one byte a second fails at the fetch's total deadline", async () => {
    const started = Date.now();
    const response = await plainFetch(`${site.url}/hostile/addresses/sitemap-drip.xml`, { rules: LOCAL_RULES, userAgent: null, timeoutMs: 2500, maxBytes: 1_000_000 });
    expect(response.status).toBe(200);
    await expect(readText(response.body)).rejects.toThrow(FetchDeadlineError);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(2400);
    expect(took).toBeLessThan(8000);
  });

  it("a dripping robots.txt counts as unreachable (RFC 9309): nothing on its host is allowed, and every waiter gets the answer", async () => {
    const robots = new RobotsTxt({ rules: LOCAL_RULES, userAgent: null, agent: "warc-crawler", timeoutMs: 2500 });
    const started = Date.now();
    // Several workers meeting links to the host wait on one fetch; all of them get the answer at its deadline.
    const verdicts = await Promise.all([1, 2, 3].map(() => robots.check(`${dripSite.url}/page/1`)));
    expect(verdicts).toEqual(Array(3).fill({ allowed: false, reason: "robots.txt unreachable" }));
    expect(Date.now() - started).toBeLessThan(8000);
    expect(dripSite.hits.get("/robots.txt")).toBe(1);
    // Asked again (unreachable is remembered for a while): no second fetch.
    expect(await robots.check(`${dripSite.url}/page/2`)).toEqual({ allowed: false, reason: "robots.txt unreachable" });
    expect(dripSite.hits.get("/robots.txt")).toBe(1);
  });

  it("the sitemap reader ends when a sitemap drips, and goes on to the next one", async () => {
    const counts = { sitemaps: 0, failed: 0, skipped: 0 };
    const started = Date.now();
    const entries: string[] = [];
    const sitemaps = [`${site.url}/hostile/addresses/sitemap-drip.xml`, `${site.url}/hostile/addresses/sitemap-pages.xml?to=9`];
    for await (const entry of readSitemaps(sitemaps, { rules: LOCAL_RULES, userAgent: null, timeoutMs: 2500 }, counts)) entries.push(entry.url);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(counts).toEqual({ sitemaps: 2, failed: 1, skipped: 0 });
    expect(entries).toEqual([`${site.url}/hostile/addresses/listed-page`, "http://evil.test:9/hostile/addresses/listed-secret"]);
  });
});
