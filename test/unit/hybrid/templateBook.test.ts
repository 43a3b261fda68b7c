import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { TemplateBook } from "../../../src/hybrid/templateBook.js";
import { learnTemplate } from "../../../src/hybrid/templateLearning.js";
import type { BrowsedObservation, CaptureChoice } from "../../../src/hybrid/templateTypes.js";
import { logger, type LogEntry } from "../../../src/log/logger.js";
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();
const keys = crawlStateKeys("hybrid-test");
const SITE = "https://example.com";
const TEMPLATE = "0123456789abcdef";
const SCRIPTS = [`${SITE}/app.js?v=3`];

function observation(slug: string): BrowsedObservation {
  return {
    pageUrl: `${SITE}/articles/${slug}.html`,
    scripts: SCRIPTS,
    extraFetches: ["https://cdn.example.net/config.json", `${SITE}/api/${slug}.json`, `https://stats.example.org/b?t=${Math.random()}`],
    extraLinks: [],
    behaviorsFound: false,
  };
}

const page = (n: number) => `${SITE}/articles/page${n}.html`;

/** A choice's mode with its purpose, for comparing sequences. */
function kind(choice: CaptureChoice): string {
  return choice.mode === "browser" ? `browser/${choice.purpose}` : choice.mode;
}

const others: Redis[] = [];
function secondConnection(): Redis {
  const client = new Redis(redis.url);
  others.push(client);
  return client;
}

afterEach(() => {
  for (const client of others.splice(0)) client.disconnect();
  logger.onLine(null);
});

describe("TemplateBook", () => {
  it("learning slots, waiting for them, then static with the learned fetches", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 2, verifyEvery: 0 });
    expect(await book.choose(page(1), TEMPLATE, SCRIPTS)).toEqual({ mode: "browser", template: TEMPLATE, purpose: "learn", reason: "learning page 1 of 2" });
    expect(await book.choose(page(2), TEMPLATE, SCRIPTS)).toEqual({ mode: "browser", template: TEMPLATE, purpose: "learn", reason: "learning page 2 of 2" });
    expect(await book.choose(page(3), TEMPLATE, SCRIPTS)).toEqual({
      mode: "wait",
      template: TEMPLATE,
      retryInMs: 1000,
      reason: "the template's learning pages are being browsed (0 of 2 learned)",
    });
    expect(await book.learned(TEMPLATE)).toBeNull();
    await book.learn(TEMPLATE, observation("foo"));
    expect(kind(await book.choose(page(3), TEMPLATE, SCRIPTS))).toBe("wait");
    await book.learn(TEMPLATE, observation("bar"));
    expect(await book.choose(page(3), TEMPLATE, SCRIPTS)).toEqual({
      mode: "static",
      template: TEMPLATE,
      fetches: ["https://cdn.example.net/config.json", `${SITE}/api/page3.json`],
      links: [],
    });
    expect(await book.learned(TEMPLATE)).toEqual(learnTemplate([observation("foo"), observation("bar")]));
    expect((await book.learned(TEMPLATE))?.volatilePaths).toEqual(["https://stats.example.org/b"]);
    // A later observation (a slot taken over from a slow holder) does not change what every process learned.
    await book.learn(TEMPLATE, { ...observation("baz"), behaviorsFound: true });
    expect((await book.learned(TEMPLATE))?.observations).toBe(2);
    expect(kind(await book.choose(page(4), TEMPLATE, SCRIPTS))).toBe("static");
    // Another process reads the template from Redis.
    const other = new TemplateBook(secondConnection(), keys, { learnPages: 2, verifyEvery: 0 });
    expect(await other.choose(page(5), TEMPLATE, SCRIPTS)).toEqual({
      mode: "static",
      template: TEMPLATE,
      fetches: ["https://cdn.example.net/config.json", `${SITE}/api/page5.json`],
      links: [],
    });
  });

  it("the first page the guard lets go static is a verify page the others wait for; then one in verifyEvery since the last; guard pages do not count", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 3 });
    const kinds: string[] = [];
    kinds.push(kind(await book.choose(page(1), TEMPLATE, SCRIPTS)));
    await book.learn(TEMPLATE, observation("foo"));
    expect(await book.choose(page(2), TEMPLATE, SCRIPTS)).toEqual({ mode: "browser", template: TEMPLATE, purpose: "verify", reason: "the template's first page the guard lets through: verified before any is captured without the browser", turn: { selectors: [], first: true } });
    // Until its outcome is in, the template's other pages wait, in every process.
    const other = new TemplateBook(secondConnection(), keys, { learnPages: 1, verifyEvery: 3 });
    expect(await other.choose(page(3), TEMPLATE, SCRIPTS)).toEqual({ mode: "wait", template: TEMPLATE, retryInMs: 1000, reason: "the template's first verify page is being browsed" });
    expect(await book.verified(TEMPLATE, page(2), { fetches: [], links: [] })).toBe("matched");
    for (let n = 3; n <= 8; n++) kinds.push(kind(await (n % 2 ? other : book).choose(page(n), TEMPLATE, n === 5 ? [...SCRIPTS, `${SITE}/other.js`] : SCRIPTS)));
    expect(kinds).toEqual(["browser/learn", "static", "static", "browser/guard", "browser/verify", "static", "static"]);
    const verify = await book.choose(page(9), TEMPLATE, SCRIPTS);
    expect(verify).toEqual({ mode: "browser", template: TEMPLATE, purpose: "verify", reason: "page 3 the guard let through since the template's last verify page: one in 3 is verified", turn: { selectors: [], first: false } });
  });

  it("a verify page of any kind restarts the count to the next sampled one: no more than verifyEvery - 1 pages in a row go unchecked", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 3, learnWaitMs: 300 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, { ...observation("foo"), absentSelectors: [".panics", ".unsafe"], presentSelectors: [] });
    const holds = (...selectors: string[]) => (asked: readonly string[]) => asked.filter((s) => selectors.includes(s));
    // Page 2 is verified for its selector, and is the template's first verify page too.
    expect(await book.choose(page(2), TEMPLATE, SCRIPTS, holds(".panics"))).toMatchObject({ purpose: "verify", turn: { selectors: [".panics"], first: true } });
    expect(await book.verified(TEMPLATE, page(2), { fetches: [`${SITE}/img/panics.svg`], links: [] }, [".panics"])).toBe("adopted");
    const kinds: string[] = [];
    const choose = async (n: number, ...held: string[]) => {
      const choice = await book.choose(page(n), TEMPLATE, SCRIPTS, holds(...held));
      kinds.push(kind(choice));
      return choice;
    };
    await choose(3);
    await choose(4, ".unsafe"); // verified for its selector
    expect(await book.verified(TEMPLATE, page(4), { fetches: [`${SITE}/img/unsafe.svg`], links: [] }, [".unsafe"])).toBe("adopted");
    for (let n = 5; n <= 6; n++) await choose(n);
    expect(await choose(7)).toMatchObject({ reason: "page 3 the guard let through since the template's last verify page: one in 3 is verified" });
    // After an adoption the next page is verified: that restarts the count too.
    expect(await book.verified(TEMPLATE, page(7), { fetches: [`${SITE}/img/other.svg`], links: [] })).toBe("adopted");
    for (let n = 8; n <= 13; n++) await choose(n);
    expect(kinds).toEqual([
      "static", "browser/verify", // page 4: its selector
      "static", "static", "browser/verify", // page 7: sampled, 3 after page 4
      "browser/verify", "static", "static", "browser/verify", "static", "static", // page 8: after the adoption; page 11: sampled
    ]);
  });

  it("a first verify page that fails to load is handed to the next page at once; one whose holder went quiet, after learnWaitMs", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 3, learnWaitMs: 300 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, observation("foo"));
    expect(kind(await book.choose(page(2), TEMPLATE, SCRIPTS))).toBe("browser/verify");
    await book.verifyFailed(TEMPLATE, { selectors: [], first: true });
    expect(kind(await book.choose(page(3), TEMPLATE, SCRIPTS))).toBe("browser/verify");
    expect(kind(await book.choose(page(4), TEMPLATE, SCRIPTS))).toBe("wait");
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await book.choose(page(4), TEMPLATE, SCRIPTS)).toMatchObject({ purpose: "verify", reason: "the template's first verify page was not done within 300 ms: verifying another" });
    expect(await book.verified(TEMPLATE, page(4), { fetches: [], links: [] })).toBe("matched");
    // Once done, a late failure of another verify page changes nothing.
    await book.verifyFailed(TEMPLATE, { selectors: [], first: true });
    expect(kind(await book.choose(page(5), TEMPLATE, SCRIPTS))).toBe("static");
  });

  it("a page holding what the learning pages' scripts looked for in vain is verified, one page a selector at a time; its adoptions count no limit", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 0, learnWaitMs: 300 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, { ...observation("foo"), absentSelectors: ["img.toggler", ".panics", ".playground", ".unsafe"], presentSelectors: ["main"] });
    const holds = (...selectors: string[]) => (asked: readonly string[]) => asked.filter((s) => selectors.includes(s));
    expect(await book.choose(page(2), TEMPLATE, SCRIPTS, holds())).toMatchObject({ mode: "static" });
    const toggler = await book.choose(page(3), TEMPLATE, SCRIPTS, holds("img.toggler", "main"));
    expect(toggler).toEqual({ mode: "browser", template: TEMPLATE, purpose: "verify", reason: "the document holds what the template's scripts look for and no browsed page held: img.toggler", turn: { selectors: ["img.toggler"], first: false } });
    // Another page holding it waits for that page's outcome, in any process; one holding more takes the rest.
    const other = new TemplateBook(secondConnection(), keys, { learnPages: 1, verifyEvery: 0, learnWaitMs: 300 });
    expect(await other.choose(page(4), TEMPLATE, SCRIPTS, holds("img.toggler"))).toMatchObject({ mode: "wait" });
    expect(await other.choose(page(5), TEMPLATE, SCRIPTS, holds("img.toggler", ".panics"))).toMatchObject({ purpose: "verify", turn: { selectors: [".panics"] } });
    // Its misses, the same URLs on any page, are adopted; the selector is explained: pages holding it go static.
    expect(await book.verified(TEMPLATE, page(3), { fetches: [`${SITE}/_static/plus.png`], links: [] }, ["img.toggler"])).toBe("adopted");
    const after = await other.choose(page(4), TEMPLATE, SCRIPTS, holds("img.toggler"));
    expect(after.mode === "static" && after.fetches.includes(`${SITE}/_static/plus.png`)).toBe(true);
    // A verify page that failed to load hands its selectors on at once.
    await other.verifyFailed(TEMPLATE, { selectors: [".panics"], first: false });
    expect(await book.choose(page(6), TEMPLATE, SCRIPTS, holds(".panics"))).toMatchObject({ purpose: "verify", turn: { selectors: [".panics"] } });
    // Adoptions explained by elements the learning pages lacked count against no limit, and verify no next page.
    for (const [n, selector] of [[6, ".panics"], [7, ".playground"], [8, ".unsafe"]] as const) {
      if (selector !== ".panics") expect(await book.choose(page(n), TEMPLATE, SCRIPTS, holds(selector))).toMatchObject({ purpose: "verify" });
      expect(await book.verified(TEMPLATE, page(n), { fetches: [`${SITE}/img/${selector.slice(1)}.svg`], links: [] }, [selector])).toBe("adopted");
    }
    expect(await book.choose(page(9), TEMPLATE, SCRIPTS, holds(".panics", ".playground", ".unsafe", "img.toggler"))).toMatchObject({ mode: "static" });
  });

  it("a page verified for its selectors is the template's first verify page when none is under way; its failure hands on only what it held", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 20, learnWaitMs: 300 });
    const other = new TemplateBook(secondConnection(), keys, { learnPages: 1, verifyEvery: 20, learnWaitMs: 300 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, { ...observation("foo"), absentSelectors: [".panics", ".playground"], presentSelectors: [] });
    const holds = (...selectors: string[]) => (asked: readonly string[]) => asked.filter((s) => selectors.includes(s));
    expect(await book.choose(page(2), TEMPLATE, SCRIPTS, holds(".panics"))).toMatchObject({ purpose: "verify", turn: { selectors: [".panics"], first: true } });
    // The template's other pages wait for it as for any first verify page; one holding another selector is verified for that alone.
    expect(kind(await other.choose(page(3), TEMPLATE, SCRIPTS, holds()))).toBe("wait");
    expect(await other.choose(page(4), TEMPLATE, SCRIPTS, holds(".playground"))).toMatchObject({ purpose: "verify", turn: { selectors: [".playground"], first: false } });
    // That one fails: the first verify page is still under way.
    await other.verifyFailed(TEMPLATE, { selectors: [".playground"], first: false });
    expect(kind(await other.choose(page(3), TEMPLATE, SCRIPTS, holds()))).toBe("wait");
    expect(await book.verified(TEMPLATE, page(2), { fetches: [], links: [] }, [".panics"])).toBe("matched");
    expect(kind(await other.choose(page(3), TEMPLATE, SCRIPTS, holds(".panics")))).toBe("static");
  });

  it("what is final in Redis is asked once per process: the first verify page done, a selector explained", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 20 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, { ...observation("foo"), absentSelectors: [".panics"], presentSelectors: [] });
    const holds = (...selectors: string[]) => (asked: readonly string[]) => asked.filter((s) => selectors.includes(s));
    expect(await book.choose(page(2), TEMPLATE, SCRIPTS, holds(".panics"))).toMatchObject({ purpose: "verify", turn: { selectors: [".panics"], first: true } });
    expect(await book.verified(TEMPLATE, page(2), { fetches: [], links: [] }, [".panics"])).toBe("matched");
    const client = secondConnection();
    // Round trips: scripts, and the HMGET and HDEL choose sends itself (the scripts run neither).
    const commands = async () => {
      const stats = await redis.client.info("commandstats");
      return [...stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)].filter(([, name]) => ["eval", "evalsha", "hmget", "hdel"].includes(name!)).reduce((sum, [, , calls]) => sum + Number(calls), 0);
    };
    const other = new TemplateBook(client, keys, { learnPages: 1, verifyEvery: 20 });
    let before = await commands();
    expect(kind(await other.choose(page(3), TEMPLATE, SCRIPTS, holds(".panics")))).toBe("static");
    // The state script, the explained selector, the page after an adoption, the first verify page, the sample.
    expect(await commands()).toBeGreaterThanOrEqual(before + 5);
    for (const [processBook, n] of [[other, 4], [book, 5]] as const) {
      before = await commands();
      expect(kind(await processBook.choose(page(n), TEMPLATE, SCRIPTS, holds(".panics")))).toBe("static");
      // Only what can still change: the state script, the page after an adoption, the sample.
      expect(await commands()).toBe(before + 3);
    }
  });

  it("verifyEvery 0 never verifies", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 0 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, observation("foo"));
    const kinds: string[] = [];
    for (let n = 2; n <= 6; n++) kinds.push(kind(await book.choose(page(n), TEMPLATE, SCRIPTS)));
    expect(kinds).toEqual(["static", "static", "static", "static", "static"]);
  });

  it("a verify page's miss sends the template back to the browser for good, in every process, logged once", async () => {
    const lines: LogEntry[] = [];
    logger.onLine((entry) => lines.push(entry));
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 2 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, observation("foo"));
    expect(kind(await book.choose(page(3), TEMPLATE, SCRIPTS))).toBe("browser/verify"); // the template's first verify page
    expect(await book.verified(TEMPLATE, page(3), { fetches: [], links: [] })).toBe("matched");
    expect(kind(await book.choose(page(2), TEMPLATE, SCRIPTS))).toBe("static");
    // Made from the page's own URL (page3): every page captured without the browser lacked its own.
    const missing = Array.from({ length: 25 }, (_, i) => `${SITE}/lazy/page3/${i}.jpg`);
    expect(await book.verified(TEMPLATE, page(3), { fetches: missing, links: [] })).toBe("fell-back");
    expect(await book.verified(TEMPLATE, page(9), { fetches: [`${SITE}/other.jpg`], links: [] })).toBe("fell-back");
    const reason = `the static capture of the verify page ${page(3)} lacked 25 URLs the browser fetched or linked, made from its own URL (${missing.slice(0, 3).join(", ")})`;
    const fellBack = { mode: "browser", template: TEMPLATE, purpose: "fallen-back", reason };
    const other = new TemplateBook(secondConnection(), keys, { learnPages: 1, verifyEvery: 2 });
    for (let n = 4; n <= 6; n++) {
      expect(await book.choose(page(n), TEMPLATE, SCRIPTS)).toEqual(fellBack);
      expect(await other.choose(page(n), TEMPLATE, SCRIPTS)).toEqual(fellBack);
    }
    const warnings = lines.filter((line) => line.logLevel === "warn");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.context).toBe("capture");
    expect(warnings[0]!.message).toBe(`template ${TEMPLATE} falls back to the browser for the rest of the crawl: ${reason}`);
    expect(warnings[0]!.details).toEqual({ template: TEMPLATE, page: page(3), missing: missing.slice(0, 20), missingCount: 25 });
    // Another template is not touched.
    expect(kind(await other.choose(page(7), "fedcba9876543210", SCRIPTS))).toBe("browser/learn");
  });

  it("a verify page's misses that no page URL makes are adopted, the next page verified, and after 3 such verify pages the template falls back", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 3 });
    await book.choose(page(1), TEMPLATE, SCRIPTS);
    await book.learn(TEMPLATE, observation("foo"));
    const learnedBefore = (await book.learned(TEMPLATE))!;
    expect(kind(await book.choose(page(2), TEMPLATE, SCRIPTS))).toBe("browser/verify"); // the first the guard lets through
    // Under the folder every page of the template is in (articles/): the same URLs on any page.
    const icon = `${SITE}/articles/img/does_not_compile.svg`;
    const intro = `${SITE}/articles/intro.html#ferris`;
    expect(await book.verified(TEMPLATE, page(4), { fetches: [icon], links: [intro] })).toBe("adopted");
    // Another process reads the adopted URLs too; the next page the guard lets through is a verify page.
    const other = new TemplateBook(secondConnection(), keys, { learnPages: 1, verifyEvery: 3 });
    expect(await other.learned(TEMPLATE)).toEqual({ ...learnedBefore, fixedFetches: [...learnedBefore.fixedFetches, icon], fixedLinks: [...learnedBefore.fixedLinks, intro] });
    expect(kind(await other.choose(page(5), TEMPLATE, SCRIPTS))).toBe("browser/verify");
    const next = await book.choose(page(6), TEMPLATE, SCRIPTS);
    expect(next.mode === "static" && next.fetches.includes(icon) && next.links.includes(intro)).toBe(true);
    expect(await book.verified(TEMPLATE, page(7), { fetches: [`${SITE}/img/panics.svg`], links: [] })).toBe("adopted");
    expect(await book.verified(TEMPLATE, page(8), { fetches: [`${SITE}/img/unsafe.svg`], links: [] })).toBe("adopted");
    expect(await book.verified(TEMPLATE, page(9), { fetches: [`${SITE}/img/fourth.svg`], links: [] })).toBe("fell-back");
    expect(await other.choose(page(10), TEMPLATE, SCRIPTS)).toEqual({
      mode: "browser", template: TEMPLATE, purpose: "fallen-back",
      reason: `the static capture of the verify page ${page(9)} lacked 1 URL the browser fetched or linked, after 3 verify pages that showed URLs the template lacked`,
    });
  });

  it("two processes racing for a new template's learning slots get learnPages of them in all", async () => {
    const one = new TemplateBook(redis.client, keys, { learnPages: 3, verifyEvery: 0 });
    const two = new TemplateBook(secondConnection(), keys, { learnPages: 3, verifyEvery: 0 });
    const choices = await Promise.all(Array.from({ length: 20 }, (_, n) => (n % 2 ? one : two).choose(page(n), TEMPLATE, SCRIPTS)));
    const kinds = choices.map(kind);
    expect(kinds.filter((k) => k === "browser/learn")).toHaveLength(3);
    expect(kinds.filter((k) => k === "wait")).toHaveLength(17);
    expect(choices.filter((c) => c.mode === "browser").map((c) => c.mode === "browser" && c.reason).sort()).toEqual([
      "learning page 1 of 3",
      "learning page 2 of 3",
      "learning page 3 of 3",
    ]);
  });

  it("a learning slot older than learnWaitMs with no observation is browsed again, and the wait starts over", async () => {
    const book = new TemplateBook(redis.client, keys, { learnPages: 1, verifyEvery: 0, learnWaitMs: 300 });
    expect(kind(await book.choose(page(1), TEMPLATE, SCRIPTS))).toBe("browser/learn");
    expect(kind(await book.choose(page(2), TEMPLATE, SCRIPTS))).toBe("wait");
    await new Promise((resolve) => setTimeout(resolve, 400));
    const stale = await book.choose(page(2), TEMPLATE, SCRIPTS);
    expect(kind(stale)).toBe("browser/learn");
    expect(stale.mode === "browser" && stale.reason).toMatch(/^no learning page was taken for \d+ ms and the template is not learned yet: browsing another$/);
    expect(kind(await book.choose(page(3), TEMPLATE, SCRIPTS))).toBe("wait");
    await book.learn(TEMPLATE, observation("foo"));
    expect(kind(await book.choose(page(3), TEMPLATE, SCRIPTS))).toBe("static");
  });
});
