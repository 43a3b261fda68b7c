import { describe, expect, it } from "vitest";
import { deriveFor, isVolatile, learnTemplate, madeFromPage, type LearnedTemplate } from "../../../src/hybrid/templateLearning.js";
import type { BrowsedObservation } from "../../../src/hybrid/templateTypes.js";

const SITE = "https://example.com";

function observation(page: string, extraFetches: string[], extra: Partial<BrowsedObservation> = {}): BrowsedObservation {
  return { pageUrl: `${SITE}${page}`, scripts: [`${SITE}/app.js`], extraFetches, extraLinks: [], behaviorsFound: false, ...extra };
}

const NOTHING_LEARNED: Omit<LearnedTemplate, "observations"> = {
  scripts: [`${SITE}/app.js`],
  fixedFetches: [],
  fetchRules: [],
  volatilePaths: [],
  pageSpecificFetches: [],
  fixedLinks: [],
  linkRules: [],
  pageSpecificLinks: [],
  behaviorsFound: false,
  absentSelectors: [],
};

describe("learnTemplate", () => {
  it("a URL every browsed page fetched is fixed; scripts are kept with cache busters dropped", () => {
    const learned = learnTemplate([
      observation("/articles/foo.html", ["https://cdn.example.net/config.json"], { scripts: [`${SITE}/app.js?v=1`, "https://ads.example.org/ad.js?slot=3&_=99"] }),
      observation("/articles/bar.html", ["https://cdn.example.net/config.json"], { scripts: [`${SITE}/app.js?v=2`] }),
    ]);
    expect(learned).toEqual({
      ...NOTHING_LEARNED,
      observations: 2,
      scripts: ["https://ads.example.org/ad.js?slot=3", `${SITE}/app.js`],
      fixedFetches: ["https://cdn.example.net/config.json"],
    });
    expect(deriveFor(learned, `${SITE}/articles/baz.html`)).toEqual({ fetches: ["https://cdn.example.net/config.json"], links: [] });
  });

  it("a URL made from the page's stem on two pages is a rule, filled in for a third page", () => {
    const learned = learnTemplate([observation("/articles/foo.html", [`${SITE}/api/foo.json`]), observation("/articles/bar.html", [`${SITE}/api/bar.json`])]);
    expect(learned).toEqual({ ...NOTHING_LEARNED, observations: 2, fetchRules: [`${SITE}/api/{stem}.json`] });
    expect(deriveFor(learned, `${SITE}/articles/baz.html`)).toEqual({ fetches: [`${SITE}/api/baz.json`], links: [] });
  });

  it("a query parameter's value makes a rule by name; a page without the parameter is underivable", () => {
    const learned = learnTemplate([observation("/item?id=12345", [`${SITE}/data/12345.json`]), observation("/item?id=67890&x=1", [`${SITE}/data/67890.json`])]);
    // Its pages are in the site's root folder, as its script is: named by its name (static/templateKey.ts scriptIdentity).
    expect(learned).toEqual({ ...NOTHING_LEARNED, observations: 2, scripts: ["./app.js"], fetchRules: [`${SITE}/data/{query:id}.json`] });
    expect(deriveFor(learned, `${SITE}/item?lang=fr&id=555`)).toEqual({ fetches: [`${SITE}/data/555.json`], links: [] });
    expect(deriveFor(learned, `${SITE}/item?other=12345`)).toEqual({ underivable: `the rule ${SITE}/data/{query:id}.json needs {query:id}, which ${SITE}/item?other=12345 does not have` });
    expect(deriveFor(learned, `${SITE}/item?id=`)).toEqual({ underivable: `the rule ${SITE}/data/{query:id}.json needs {query:id}, which ${SITE}/item?id= does not have` });
  });

  it("path segments by position and the whole path make rules; the longest part is replaced first", () => {
    const learned = learnTemplate([
      observation("/shop/red/red-shoes.html", [`${SITE}/img/red-shoes.jpg`, `${SITE}/amp/shop/red/red-shoes.html`, `${SITE}/api/colors/red.json`]),
      observation("/shop/blue/blue-hat.html", [`${SITE}/img/blue-hat.jpg`, `${SITE}/amp/shop/blue/blue-hat.html`, `${SITE}/api/colors/blue.json`]),
    ]);
    expect(learned.fetchRules).toEqual([`${SITE}/amp/{path}`, `${SITE}/api/colors/{segment2}.json`, `${SITE}/img/{stem}.jpg`]);
    expect(learned.pageSpecificFetches).toEqual([]);
    expect(deriveFor(learned, `${SITE}/shop/green/green-cap.html`)).toEqual({
      fetches: [`${SITE}/amp/shop/green/green-cap.html`, `${SITE}/api/colors/green.json`, `${SITE}/img/green-cap.jpg`],
      links: [],
    });
    expect(deriveFor(learned, `${SITE}/green-cap.html`)).toEqual({ underivable: `the rule ${SITE}/amp/{path} needs {path}, which ${SITE}/green-cap.html does not have` });
  });

  it("a part of 2 characters is replaced; a single character never is: it stays in the rule, or leaves the URL page-specific", () => {
    const twoChars = learnTemplate([observation("/en/foo.html", [`${SITE}/api/en/foo.json`]), observation("/en/bar.html", [`${SITE}/api/en/bar.json`])]);
    expect(twoChars.fetchRules).toEqual([`${SITE}/api/{segment1}/{stem}.json`]);
    expect(deriveFor(twoChars, `${SITE}/de/baz.html`)).toEqual({ fetches: [`${SITE}/api/de/baz.json`], links: [] });
    const kept = learnTemplate([observation("/a/foo.html", [`${SITE}/api/a/foo.json`]), observation("/a/bar.html", [`${SITE}/api/a/bar.json`])]);
    expect(kept.fetchRules).toEqual([`${SITE}/api/a/{stem}.json`]);
    expect(deriveFor(kept, `${SITE}/b/baz.html`)).toEqual({ fetches: [`${SITE}/api/a/baz.json`], links: [] });
    const differing = learnTemplate([observation("/a/foo.html", [`${SITE}/i18n/a.json`]), observation("/b/bar.html", [`${SITE}/i18n/b.json`])]);
    expect(differing).toEqual({ ...NOTHING_LEARNED, observations: 2, pageSpecificFetches: [`${SITE}/i18n/a.json`, `${SITE}/i18n/b.json`] });
  });

  it("a beacon with a query of its own on every page is volatile; a URL one page fetched is page-specific", () => {
    const learned = learnTemplate([
      observation("/articles/foo.html", ["https://stats.example.org/b?t=1733500000123&r=0.123", `${SITE}/widgets/weather.json`]),
      observation("/articles/bar.html", ["https://stats.example.org/b?t=1733500009876&r=0.987"]),
    ]);
    expect(learned).toEqual({
      ...NOTHING_LEARNED,
      observations: 2,
      volatilePaths: ["https://stats.example.org/b"],
      pageSpecificFetches: [`${SITE}/widgets/weather.json`],
    });
    expect(isVolatile(learned, "https://stats.example.org/b?t=42")).toBe(true);
    expect(isVolatile(learned, "https://stats.example.org/c?t=42")).toBe(false);
    expect(isVolatile(learned, `${SITE}/widgets/weather.json`)).toBe(false);
  });

  it("links are learned as fixed, rules and page-specific; behaviors found on any page are kept", () => {
    const learned = learnTemplate([
      observation("/articles/foo.html", [], { extraLinks: [`${SITE}/about`, `${SITE}/articles/foo.html#comments`, `${SITE}/related/zzz`] }),
      observation("/articles/bar.html", [], { extraLinks: [`${SITE}/about`, `${SITE}/articles/bar.html#comments`], behaviorsFound: true }),
    ]);
    expect(learned).toEqual({
      ...NOTHING_LEARNED,
      observations: 2,
      fixedLinks: [`${SITE}/about`],
      linkRules: [`${SITE}/{path}#comments`],
      pageSpecificLinks: [`${SITE}/related/zzz`],
      behaviorsFound: true,
    });
  });

  it("a URL one page's script made and another page's document names (or is) is on both pages: fixed, not page-specific", () => {
    // rustdoc: the sidebar, made by script, lists every item of the module; each page's own text links some of them.
    const items = ["enum.Option.html", "struct.Vec.html", "fn.spawn.html", "struct.Other.html"].map((item) => `${SITE}/std/${item}`);
    const [option, vec, spawn, other] = items;
    const seen = [
      observation("/std/enum.Option.html", [`${SITE}/std/icons.svg`], { extraLinks: [vec!, spawn!], staticLinks: [`${SITE}/std/enum.Option.html`, other!], staticFetches: [] }),
      observation("/std/struct.Vec.html", [], { extraLinks: [option!, spawn!, other!], staticLinks: [`${SITE}/std/struct.Vec.html`], staticFetches: [`${SITE}/std/icons.svg`] }),
    ];
    const learned = learnTemplate(seen);
    expect(learned).toEqual({ ...NOTHING_LEARNED, observations: 2, fixedLinks: [vec, spawn, option, other], fixedFetches: [`${SITE}/std/icons.svg`] });
    expect(deriveFor(learned, `${SITE}/std/fn.spawn.html`)).toEqual({ fetches: [`${SITE}/std/icons.svg`], links: [vec, spawn, option, other] });
    // Observations kept by an older crawler say nothing of what the documents name: the same URLs are page-specific.
    const older = learnTemplate(seen.map(({ staticLinks: _links, staticFetches: _fetches, ...rest }) => rest));
    expect(older.fixedLinks).toEqual([spawn]);
    expect(older.pageSpecificLinks).toEqual([option, other, vec].sort());
    expect(older.pageSpecificFetches).toEqual([`${SITE}/std/icons.svg`]);
  });

  it("a link one page's script made while it was new, and the other page's script made once the crawl had found it, is on both pages: fixed", () => {
    // Python's docs: the search forms' links, new on the first learning page, found already by the second's turn.
    const search = `${SITE}/search.html?q=`;
    const seen = [
      observation("/index.html", [], { extraLinks: [search], staticLinks: [`${SITE}/index.html`], staticFetches: [] }),
      observation("/download.html", [], { extraLinks: [], foundLinks: [search], staticLinks: [`${SITE}/download.html`], staticFetches: [] }),
    ];
    expect(learnTemplate(seen)).toMatchObject({ fixedLinks: [search], pageSpecificLinks: [] });
    // Without what the second page's script made, the link looked like the first page's own.
    expect(learnTemplate(seen.map(({ foundLinks: _found, ...rest }) => rest))).toMatchObject({ fixedLinks: [], pageSpecificLinks: [search] });
  });

  it("keeps the selectors the pages' scripts looked for that no browsed document held", () => {
    const seen = [
      observation("/a.html", [], { absentSelectors: ["img.toggler", "div.ad"], presentSelectors: ["input[name=q]"] }),
      observation("/b.html", [], { absentSelectors: ["input[name=q]", "img.toggler"], presentSelectors: ["div.ad"] }),
    ];
    expect(learnTemplate(seen).absentSelectors).toEqual(["img.toggler"]);
    // Older observations say nothing of it.
    expect(learnTemplate([observation("/a.html", []), observation("/b.html", [])]).absentSelectors).toEqual([]);
  });

  it("from a single browsed page, a URL holding a part of its URL is a rule and the others are fixed", () => {
    const learned = learnTemplate([observation("/articles/foo.html", [`${SITE}/api/foo.json`, `${SITE}/config.json`])]);
    expect(learned).toEqual({ ...NOTHING_LEARNED, observations: 1, fixedFetches: [`${SITE}/config.json`], fetchRules: [`${SITE}/api/{stem}.json`] });
    expect(deriveFor(learned, `${SITE}/articles/qux.html`)).toEqual({ fetches: [`${SITE}/config.json`, `${SITE}/api/qux.json`], links: [] });
  });

  it("braces of a URL's own text are kept literally through a rule", () => {
    const learned = learnTemplate([observation("/p/foo", [`${SITE}/q?x={a}&slug=foo`]), observation("/p/bar", [`${SITE}/q?x={a}&slug=bar`])]);
    expect(learned.fetchRules).toEqual([`${SITE}/q?x={{a}}&slug={segment2}`]);
    expect(deriveFor(learned, `${SITE}/p/baz`)).toEqual({ fetches: [`${SITE}/q?x={a}&slug=baz`], links: [] });
  });

  it("madeFromPage: a URL another learning page would make differently is the page's own; one made only of the folder every page shares is not", () => {
    expect(madeFromPage(`${SITE}/api/reviews/p6.json`, `${SITE}/products/p6.html`, [`${SITE}/products/p1.html`])).toBe(true);
    expect(madeFromPage(`${SITE}/book/img/ferris/panics.svg`, `${SITE}/book/ch11-01-writing-tests.html`, [`${SITE}/book/ch01-00-getting-started.html`, `${SITE}/book/foreword.html`])).toBe(false);
    expect(madeFromPage(`${SITE}/static/logo.svg`, `${SITE}/book/ch11.html`, [`${SITE}/book/ch01.html`])).toBe(false);
    // Without learning pages to compare with, any part of the page's URL counts.
    expect(madeFromPage(`${SITE}/book/img/ferris/panics.svg`, `${SITE}/book/ch11.html`)).toBe(true);
    // A learning page lacking the part (no query id) would make no URL: the page's own.
    expect(madeFromPage(`${SITE}/data/12345.json`, `${SITE}/item?id=12345`, [`${SITE}/item`])).toBe(true);
  });
});
