import { describe, expect, it } from "vitest";
import { SeedScope, type SeedScopeOptions } from "../../../src/scope/seedScope.js";
import { crawlKey, normalizeCrawlUrl, tryNormalizeCrawlUrl } from "../../../src/scope/urls.js";
import { parseRetryAfter } from "../../../src/politeness/rateLimit.js";

const base: SeedScopeOptions = { scopeType: "prefix", include: [], exclude: [], depth: -1, extraHops: 0 };

describe("urls", () => {
  it("accepts only http(s) and drops fragments", () => {
    expect(normalizeCrawlUrl("http://a.test/x#frag")).toBe("http://a.test/x");
    expect(normalizeCrawlUrl("http://a.test/x#frag", undefined, true)).toBe("http://a.test/x#frag");
    for (const bad of ["file:///etc/passwd", "chrome://settings", "data:text/html,hi", "javascript:alert(1)", "mailto:a@b", "not a url"]) {
      expect(tryNormalizeCrawlUrl(bad)).toBeNull();
    }
    expect(normalizeCrawlUrl("café.html", "http://a.test/site/")).toBe("http://a.test/site/caf%C3%A9.html");
  });
});

describe("page keys (crawlKey): one page, one key", () => {
  it("sorts the query by parameter name, keeping the order of one name's values and the bytes as written", () => {
    expect(crawlKey("http://a.test/p?b=2&a=1")).toBe("http://a.test/p?a=1&b=2");
    expect(crawlKey("http://a.test/p?a=1&b=2")).toBe("http://a.test/p?a=1&b=2");
    expect(crawlKey("http://a.test/p?z=1&a=2&a=1")).toBe("http://a.test/p?a=2&a=1&z=1");
    expect(crawlKey("http://a.test/p?q=a+b")).not.toBe(crawlKey("http://a.test/p?q=a%2Bb"));
    expect(crawlKey("http://a.test/p?b&a=")).toBe("http://a.test/p?a=&b");
  });

  it("drops an empty query, empty parameters and default ports; lower-cases scheme and host", () => {
    expect(crawlKey("http://a.test/p?")).toBe("http://a.test/p");
    expect(crawlKey("http://a.test/p?&b=2&&a=1&")).toBe("http://a.test/p?a=1&b=2");
    expect(crawlKey("http://a.test:80/p")).toBe("http://a.test/p");
    expect(crawlKey("https://a.test:443/p")).toBe("https://a.test/p");
    expect(crawlKey("http://a.test:8080/p")).toBe("http://a.test:8080/p");
    expect(crawlKey("HTTP://A.Test/P")).toBe("http://a.test/P");
  });

  it("drops the fragment unless asked to keep it (--allowHashUrls)", () => {
    expect(crawlKey("http://a.test/p?b=1&a=1#x")).toBe("http://a.test/p?a=1&b=1");
    expect(crawlKey("http://a.test/p?b=1&a=1#x", true)).toBe("http://a.test/p?a=1&b=1#x");
    expect(crawlKey("http://a.test/p#x", true)).not.toBe(crawlKey("http://a.test/p#y", true));
  });
});

describe("Retry-After", () => {
  it("reads delay-seconds and HTTP dates; anything else is no answer", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter(" 120 ", now)).toBe(120_000);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30_000);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    for (const bad of [null, "", "soon", "5 minutes", "-3", "1.5"]) expect(parseRetryAfter(bad, now)).toBeNull();
  });
});

describe("scope", () => {
  it("prefix keeps links under the seed's folder", () => {
    const scope = new SeedScope("http://a.test/site/index.html", base);
    expect(scope.decide("http://a.test/site/deep/x.html", 0, 0)).toEqual({ inScope: true, extraHops: 0 });
    expect(scope.decide("http://a.test/outside/x.html", 0, 0)).toEqual({ inScope: false, reason: "out-of-scope" });
    expect(scope.decide("http://b.test/site/x.html", 0, 0).inScope).toBe(false);
  });

  it("host, domain, page, any and custom", () => {
    const host = new SeedScope("http://a.test/site/index.html", { ...base, scopeType: "host" });
    expect(host.decide("http://a.test/other", 0, 0).inScope).toBe(true);
    expect(host.decide("http://sub.a.test/other", 0, 0).inScope).toBe(false);
    const domain = new SeedScope("http://www.a.test/", { ...base, scopeType: "domain" });
    expect(domain.decide("http://sub.a.test/x", 0, 0).inScope).toBe(true);
    expect(domain.decide("http://nota.test/x", 0, 0).inScope).toBe(false);
    const page = new SeedScope("http://a.test/p.html", { ...base, scopeType: "page" });
    expect(page.decide("http://a.test/q.html", 0, 0).inScope).toBe(false);
    expect(new SeedScope("http://a.test/", { ...base, scopeType: "any" }).decide("http://z.test/", 0, 0).inScope).toBe(true);
    const custom = new SeedScope("http://a.test/", { ...base, scopeType: "custom", include: [/\/keep\//] });
    expect(custom.decide("http://a.test/keep/1", 0, 0).inScope).toBe(true);
    expect(custom.decide("http://a.test/drop/1", 0, 0).inScope).toBe(false);
  });

  it("a change of scheme or a leading www. stays in the seed's scope (browsertrix-crawler's rule)", () => {
    const prefix = new SeedScope("http://a.test/site/", base);
    expect(prefix.decide("https://www.a.test/site/x", 0, 0).inScope).toBe(true);
    expect(prefix.decide("http://www2.a.test/site/x", 0, 0).inScope).toBe(true);
    expect(prefix.decide("http://sub.a.test/site/x", 0, 0).inScope).toBe(false);
    expect(prefix.decide("https://www.a.test/other/x", 0, 0).inScope).toBe(false);
    const fromWww = new SeedScope("https://www.a.test/", { ...base, scopeType: "host" });
    expect(fromWww.decide("http://a.test/x", 0, 0).inScope).toBe(true);
    const page = new SeedScope("http://a.test/p?b=1&a=2", { ...base, scopeType: "page" });
    expect(page.covers("https://www.a.test/p?a=2&b=1")).toBe(true);
    expect(page.covers("http://a.test/q")).toBe(false);
    // What the seed landed on is its page; a link to another spelling of it is another URL, not followed.
    const sina = new SeedScope("https://www.sina.com.cn/", { ...base, scopeType: "page" });
    expect(sina.covers("http://sina.com.cn/")).toBe(true);
    expect(sina.decide("http://sina.com.cn/", 0, 0)).toEqual({ inScope: false, reason: "out-of-scope" });
    expect(sina.decide("https://sina.com.cn/", 0, 0)).toEqual({ inScope: false, reason: "out-of-scope" });
    expect(sina.decideListed("http://www.sina.com.cn/")).toEqual({ inScope: false, reason: "out-of-scope" });
    expect(sina.decide("https://www.sina.com.cn/", 0, 0)).toEqual({ inScope: true, extraHops: 0 });
    const spa = new SeedScope("https://www.a.test/app", { ...base, scopeType: "page-spa" });
    expect(spa.decide("https://www.a.test/app#/inbox", 0, 0)).toEqual({ inScope: true, extraHops: 0 });
    expect(spa.decide("http://a.test/app#/inbox", 0, 0)).toEqual({ inScope: false, reason: "out-of-scope" });
    expect(spa.covers("http://a.test/app")).toBe(true);
    const other = new SeedScope("http://a.test/site/", { ...base, exclude: [/secret/] });
    expect(other.covers("http://b.test/site/")).toBe(false);
    expect(other.covers("http://a.test/site/secret")).toBe(false);
    expect(other.withUrl("http://b.test/site/").covers("http://b.test/site/x")).toBe(true);
  });

  it("exclude, depth and extra hops", () => {
    const scope = new SeedScope("http://a.test/site/", { ...base, exclude: [/private/], depth: 2, extraHops: 1 });
    expect(scope.decide("http://a.test/site/private.html", 0, 0)).toEqual({ inScope: false, reason: "excluded" });
    expect(scope.decide("http://a.test/site/x.html", 2, 0)).toEqual({ inScope: false, reason: "too-deep" });
    expect(scope.decide("http://a.test/elsewhere.html", 0, 0)).toEqual({ inScope: true, extraHops: 1 });
    expect(scope.decide("http://a.test/elsewhere2.html", 1, 1)).toEqual({ inScope: false, reason: "out-of-scope" });
  });
});
