// --blockRules parsing and matching, the ad host list lookup, and the blocking verdict (no browser).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HostSet, hostRules, loadAdHosts, AdHostsUnavailableError } from "../../../src/block/adHosts.js";
import { Blocking, type BlockedRequest } from "../../../src/block/blocking.js";
import { judgeByRules, parseBlockRule, textVerdict, BlockRuleError } from "../../../src/block/rules.js";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { resolveCrawlOptions } from "../../../src/config/crawlOptions.js";
import { OptionsError } from "../../../src/config/optionsError.js";
import { logger } from "../../../src/log/logger.js";

const tmp = mkdtempSync(join(tmpdir(), "blocking-unit-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function optionsOf(args: string[]) {
  const program = buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  return resolveCrawlOptions(crawlFlags(program, ["--url", "http://127.0.0.1:1/", ...args], "user", {}), {});
}

describe("--blockRules: parsing", () => {
  it("a string is a URL regex to block; a mapping (YAML) or its JSON (command line) is a rule", () => {
    expect(parseBlockRule("ads\\.js")).toMatchObject({ url: /ads\.js/, inFrameUrl: null, frameTextMatch: null, type: "block", text: "ads\\.js" });
    const rule = parseBlockRule('{"url": "embed/", "inFrameUrl": "example\\\\.com", "frameTextMatch": "channel", "type": "allowOnly"}');
    expect(rule).toMatchObject({ url: /embed\//, inFrameUrl: /example\.com/, frameTextMatch: /channel/, type: "allowOnly" });
    expect(parseBlockRule({ url: "x" })).toMatchObject({ type: "block", text: '{"url":"x"}' });
    // A regex that only starts like JSON stays a regex.
    expect(parseBlockRule("{x}y").url?.source).toBe("{x}y");
  });

  it("bad rules are refused with where and why", () => {
    expect(() => parseBlockRule({ url: "(" })).toThrow(/url is not a regular expression/);
    expect(() => parseBlockRule({ url: "x", type: "deny" })).toThrow(/block or allowOnly/);
    expect(() => parseBlockRule({ url: "x", frame: "y" })).toThrow(/unknown key "frame"/);
    expect(() => parseBlockRule(["x"])).toThrow(BlockRuleError);
  });

  it("from the command line (repeatable, several after one flag) and from a --config list of mappings; a bad one is exit 4", () => {
    const cli = optionsOf(["--blockRules", "a\\.js", '{"url":"b","type":"allowOnly"}', "--blockRules", "c", "--blockads", "--blockMessage", "<b>no</b>"]);
    expect(cli.block.rules.map((r) => [r.url?.source, r.type])).toEqual([["a\\.js", "block"], ["b", "allowOnly"], ["c", "block"]]);
    expect(cli.block).toMatchObject({ blockAds: true, blockMessage: "<b>no</b>", adBlockMessage: "" });
    const config = join(tmp, "rules.yaml");
    writeFileSync(config, "blockRules:\n  - url: 'youtube\\.com/embed/'\n    frameTextMatch: 'channelId'\n    type: allowOnly\n  - tracker\\.js\nblockAds: true\nadBlockMessage: gone\n");
    const fromFile = optionsOf(["--config", config]);
    expect(fromFile.block.rules.map((r) => [r.url?.source, r.frameTextMatch?.source ?? null, r.type])).toEqual([["youtube\\.com\\/embed\\/", "channelId", "allowOnly"], ["tracker\\.js", null, "block"]]);
    expect(fromFile.block).toMatchObject({ blockAds: true, adBlockMessage: "gone" });
    expect(() => optionsOf(["--blockRules", '{"url":"x","type":"nope"}'])).toThrow(OptionsError);
    expect(optionsOf([]).block).toEqual({ rules: [], blockMessage: "", blockAds: false, adBlockMessage: "" });
  });
});

describe("--blockRules: matching (browsertrix-crawler's semantics)", () => {
  const page = "https://example.com/page";
  const rules = (...specs: unknown[]) => specs.map((s) => parseBlockRule(s));

  it("block: a matching URL is blocked, in any frame unless inFrameUrl narrows it", () => {
    const r = rules({ url: "ads\\.js" }, { url: "thumb\\.jpg", inFrameUrl: "youtube\\.com/embed" });
    expect(judgeByRules(r, { url: "https://cdn.test/ads.js", frameUrl: page, navigation: false })).toMatchObject({ action: "block", rule: r[0] });
    expect(judgeByRules(r, { url: "https://i.test/thumb.jpg", frameUrl: page, navigation: false })).toEqual({ action: "allow" });
    expect(judgeByRules(r, { url: "https://i.test/thumb.jpg", frameUrl: "https://www.youtube.com/embed/x", navigation: false })).toMatchObject({ action: "block", rule: r[1] });
    expect(judgeByRules(r, { url: "https://cdn.test/app.js", frameUrl: page, navigation: false })).toEqual({ action: "allow" });
  });

  it("allowOnly: what does not match is blocked (in the frames inFrameUrl names); later rules still apply to what it allows", () => {
    const r = rules({ url: "(example\\.com|youtube\\.com)", type: "allowOnly", inFrameUrl: "example\\.com" }, { url: "lunr\\.js", inFrameUrl: "example\\.com" });
    expect(judgeByRules(r, { url: "https://ads.test/x.js", frameUrl: page, navigation: false })).toMatchObject({ action: "block", rule: r[0] });
    expect(judgeByRules(r, { url: "https://example.com/app.js", frameUrl: page, navigation: false })).toEqual({ action: "allow" });
    expect(judgeByRules(r, { url: "https://example.com/lunr.js", frameUrl: page, navigation: false })).toMatchObject({ action: "block", rule: r[1] });
    // In another frame the allowOnly rule does not apply.
    expect(judgeByRules(r, { url: "https://ads.test/x.js", frameUrl: "https://www.youtube.com/embed/1", navigation: false })).toEqual({ action: "allow" });
  });

  it("frameTextMatch: only frame documents whose URL matches, decided by their text (block, or allowOnly's opposite)", () => {
    const [block] = rules({ url: "embed/", frameTextMatch: "channel-A" });
    const [only] = rules({ url: "embed/", frameTextMatch: "channel-A", type: "allowOnly" });
    expect(judgeByRules([block], { url: "https://v.test/embed/1", frameUrl: page, navigation: true })).toMatchObject({ action: "checkText" });
    expect(judgeByRules([block], { url: "https://v.test/embed/1.jpg", frameUrl: page, navigation: false })).toEqual({ action: "allow" });
    expect(judgeByRules([block], { url: "https://v.test/other", frameUrl: page, navigation: true })).toEqual({ action: "allow" });
    expect(textVerdict(block, "<p>channel-A</p>")).toBe(true);
    expect(textVerdict(block, "<p>channel-B</p>")).toBe(false);
    expect(textVerdict(only, "<p>channel-A</p>")).toBe(false);
    expect(textVerdict(only, "<p>channel-B</p>")).toBe(true);
    // A frame whose text could not be read: what a text that does not match gives.
    expect(textVerdict(block, null)).toBe(false);
    expect(textVerdict(only, null)).toBe(true);
  });

  it("nothing is blocked in a frame without a document yet (about:blank); a text rule whose URL matched decides", () => {
    const r = rules({ url: ".", type: "allowOnly" });
    expect(judgeByRules(r, { url: "https://x.test/a", frameUrl: "about:blank", navigation: false })).toEqual({ action: "allow" });
    const t = rules({ url: "embed/", frameTextMatch: "x" }, { url: "embed/" });
    expect(judgeByRules(t, { url: "https://v.test/embed/1", frameUrl: page, navigation: true })).toMatchObject({ action: "checkText", rule: t[0] });
  });
});

describe("the ad host list", () => {
  it("host rules: ||host^ with type or third-party options; not $popup, $domain=, first-party only; whole-host exceptions", () => {
    const { blocked, allowed } = hostRules([
      ["! comment", "||ads.example^", "||track.test^$third-party", "||pix.test^$image,script", "||pop.test^$popup", "||site.test^$domain=a.com",
        "||first.test^$~third-party", "||path.test/ads/", "||ok.example^", "@@||ok.example^", "@@||fine.test^$image", "@@||some.test^$domain=b.com", "##.ad", "||under.ads.example^\r"].join("\n"),
    ]);
    expect([...blocked].sort()).toEqual(["ads.example", "ok.example", "pix.test", "track.test", "under.ads.example"]);
    expect([...allowed].sort()).toEqual(["fine.test", "ok.example"]);
  });

  it("a host matches itself and its subdomains, never its parent or look-alikes; exceptions win", () => {
    const list = new HostSet("t", "1", "/", new Set(["doubleclick.net", "g.tracker.test"]), new Set(["safe.doubleclick.net"]));
    expect(list.match("doubleclick.net")).toBe("doubleclick.net");
    expect(list.match("securepubads.g.DoubleClick.net.")).toBe("doubleclick.net");
    expect(list.match("a.g.tracker.test")).toBe("g.tracker.test");
    expect(list.match("tracker.test")).toBeNull();
    expect(list.match("notdoubleclick.net")).toBeNull();
    expect(list.match("doubleclick.net.evil.test")).toBeNull();
    expect(list.match("safe.doubleclick.net")).toBeNull();
    expect(list.match("x.safe.doubleclick.net")).toBeNull();
  });

  it("the installed list (Debian's uBlock Origin package) loads, with its version, and knows the big ad and tracker hosts", () => {
    const started = performance.now();
    const list = loadAdHosts();
    const ms = performance.now() - started;
    expect(list.size).toBeGreaterThan(50_000);
    expect(list.version).toMatch(/uBlock Origin \d/);
    for (const host of ["securepubads.g.doubleclick.net", "www.googletagmanager.com", "ib.adnxs.com", "www.google-analytics.com", "sb.scorecardresearch.com"]) expect(list.match(host), host).not.toBeNull();
    for (const host of ["example.com", "www.wikipedia.org", "localhost", "127.0.0.1"]) expect(list.match(host), host).toBeNull();
    expect(loadAdHosts()).toBe(list); // read once per process
    console.log(JSON.stringify({ adHosts: list.size, loadMs: Math.round(ms) }));
  });

  it("no package: a clear error naming it", () => {
    expect(() => loadAdHosts([join(tmp, "nowhere")])).toThrow(AdHostsUnavailableError);
    expect(() => loadAdHosts([join(tmp, "nowhere")])).toThrow(/webext-ublock-origin-chromium/);
  });
});

describe("Blocking", () => {
  const adHosts = new HostSet("t", "1", "/", new Set(["ads.test"]), new Set());

  it("ad hosts first, then rules; each with its message", () => {
    const blocking = new Blocking({ rules: [parseBlockRule("/banner")], adHosts, blockMessage: "rule!", adBlockMessage: "ad!" });
    expect(blocking.judge({ url: "https://x.ads.test/banner", frameUrl: "https://p.test/", navigation: true })).toEqual({ action: "block", by: "ad host", rule: "ads.test", message: "ad!" });
    expect(blocking.judge({ url: "https://p.test/banner", frameUrl: "https://p.test/", navigation: false })).toEqual({ action: "block", by: "rule", rule: "/banner", message: "rule!" });
    expect(blocking.judge({ url: "https://p.test/ok", frameUrl: "https://p.test/", navigation: false })).toEqual({ action: "allow" });
    expect(new Blocking({ rules: [], adHosts: null, blockMessage: "", adBlockMessage: "" }).active).toBe(false);
  });

  it("a page on an ad host is not blocked: said once per listed host", () => {
    const blocking = new Blocking({ rules: [], adHosts, blockMessage: "", adBlockMessage: "" });
    const lines: string[] = [];
    logger.onLine((entry) => {
      if (entry.context === "blocking") lines.push(`${entry.logLevel} ${entry.message}`);
    });
    const quiet = logger.quietStderr;
    logger.quietStderr = true;
    try {
      blocking.pageDocument("https://www.ads.test/a");
      blocking.pageDocument("https://x.ads.test/b");
      blocking.pageDocument("https://p.test/");
    } finally {
      logger.onLine(null);
      logger.quietStderr = quiet;
    }
    expect(lines).toEqual(["warn a page on an ad host is crawled all the same: pages are never blocked (--exclude keeps them out)"]);
  });

  it("the crawler's own fetches obey it too (no frame: rules with inFrameUrl do not apply), and are reported", () => {
    const seen: BlockedRequest[] = [];
    const blocking = new Blocking({ rules: [parseBlockRule({ url: "\\.mp4$", inFrameUrl: "." }), parseBlockRule("worker\\.js")], adHosts, blockMessage: "", adBlockMessage: "" });
    blocking.onBlocked((b) => seen.push(b));
    expect(blocking.blockedOutsideBrowser("https://ads.test/sw.js")).toBe(true);
    expect(blocking.blockedOutsideBrowser("https://p.test/worker.js")).toBe(true);
    expect(blocking.blockedOutsideBrowser("https://p.test/video.mp4")).toBe(false);
    expect(seen.map((b) => [b.url, b.by, b.resourceType])).toEqual([["https://ads.test/sw.js", "ad host", "Direct"], ["https://p.test/worker.js", "rule", "Direct"]]);
  });
});
