import { describe, expect, it } from "vitest";
import { SeedScope, type SeedScopeOptions } from "../src/scope/seedScope.js";
import { normalizeCrawlUrl, tryNormalizeCrawlUrl } from "../src/scope/urls.js";

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

  it("exclude, depth and extra hops", () => {
    const scope = new SeedScope("http://a.test/site/", { ...base, exclude: [/private/], depth: 2, extraHops: 1 });
    expect(scope.decide("http://a.test/site/private.html", 0, 0)).toEqual({ inScope: false, reason: "excluded" });
    expect(scope.decide("http://a.test/site/x.html", 2, 0)).toEqual({ inScope: false, reason: "too-deep" });
    expect(scope.decide("http://a.test/elsewhere.html", 0, 0)).toEqual({ inScope: true, extraHops: 1 });
    expect(scope.decide("http://a.test/elsewhere2.html", 1, 1)).toEqual({ inScope: false, reason: "out-of-scope" });
  });
});
