import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommanderError } from "commander";
import { afterAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { CANNOT_APPLY, compatWarnings } from "../../../src/config/browsertrix/flags.js";
import { splitShellWords } from "../../../src/config/browsertrix/crawlArgs.js";
import { resolveCrawlOptions, type CrawlOptions } from "../../../src/config/crawlOptions.js";
import { runCli } from "../../helpers/cli.js";

const dir = mkdtempSync(join(tmpdir(), "crawl-btx-names-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** browsertrix-crawler 1.14.1's flags: each line holds a flag's spellings (primary first) and its yargs type. */
const BTX_FLAGS = readFileSync(join(import.meta.dirname, "data", "browsertrix-1.14.1-flags.txt"), "utf8")
  .split("\n").filter((line) => line.trim() && !line.startsWith("#"))
  .map((line) => {
    const [spellings, type] = line.split("\t");
    return { spellings: spellings.split(" "), type };
  });

/** A value of the right kind for a flag (only parsing is tested here, not the crawl). */
function sampleArgs(spelling: string, type: string): string[] {
  // A proxy is connected to before the seeds are read: an empty value sets none.
  const samples: Record<string, string> = { "--scopeType": "prefix", "--serviceWorker": "disabled", "--sw": "disabled", "--config": "stdin", "--saveState": "partial", "--proxyServer": "", "--proxyServerConfig": "" };
  if (type === "boolean") return [spelling];
  return [spelling, samples[spelling] ?? (type === "number" ? "1" : "x")];
}

function quietProgram() {
  return buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
}

let files = 0;
function file(text: string, ext = "yaml"): string {
  const path = join(dir, `file-${++files}.${ext}`);
  writeFileSync(path, text);
  return path;
}

function optionsFrom(args: string[], env: NodeJS.ProcessEnv = {}): CrawlOptions {
  return resolveCrawlOptions(crawlFlags(quietProgram(), args, "user", env), {});
}

function warningsFrom(args: string[], env: NodeJS.ProcessEnv = {}): string[] {
  const program = quietProgram();
  crawlFlags(program, args, "user", env);
  return compatWarnings(program);
}

describe("browsertrix-crawler 1.14.1 flag names", () => {
  it("the flag list is the whole of 1.14.1's: 105 flags, 133 spellings", () => {
    expect(BTX_FLAGS.length).toBe(105);
    expect(BTX_FLAGS.flatMap((f) => f.spellings).length).toBe(133);
  });

  it.each(BTX_FLAGS.flatMap(({ spellings, type }) => spellings.map((spelling) => [spelling, type] as const)))("%s is accepted", (spelling, type) => {
    const program = quietProgram();
    const args = sampleArgs(spelling, type);
    // Only the parser runs: no config is read, nothing is crawled.
    if (spelling === "--config") {
      expect(() => program.parse(args, { from: "user" })).not.toThrow();
      return;
    }
    try {
      crawlFlags(program, args, "user", {});
    } catch (err) {
      const code = err instanceof CommanderError ? err.code : String(err);
      throw new Error(`${args.join(" ")} was rejected: ${code}`);
    }
  });

  it("a flag browsertrix-crawler does not have stays an error", () => {
    expect(() => crawlFlags(quietProgram(), ["--url", "http://a.test/", "--frobnicate"], "user", {})).toThrow(/unknown option '--frobnicate'/);
  });

  it("browsertrix spellings mean the same as ours", () => {
    const seedFile = file("http://a.test/\nhttp://b.test/x\n", "txt");
    const ours = optionsFrom([
      "--seedFile", seedFile, "--limit", "7", "--workers", "3", "--pageLoadTimeout", "12", "--pageExtraDelay", "1.5", "--maxPageRetries", "5",
      "--crawlId", "the-id", "--collection", "the-coll", "--description", "words", "--robots", "--useSitemap", "--sitemapFromDate", "2024",
      "--sitemapToDate", "2025-02", "--include", "a\\.test", "--include", "b\\.test", "--exclude", "logout", "--generateWACZ", "--headful",
    ]);
    const theirs = optionsFrom([
      "--urlFile", seedFile, "--pageLimit", "7", "-w", "3", "--timeout", "12", "--delay", "1.5", "--retries", "5",
      "--id", "the-id", "-c", "the-coll", "--desc", "words", "--useRobots", "--sitemap", "--sitemapFrom", "2024",
      "--sitemapTo", "2025-02", "--scopeIncludeRx", "a\\.test", "--include", "b\\.test", "--scopeExcludeRx", "logout", "--generatewacz", "--headful",
    ]);
    expect(theirs).toEqual(ours);
    expect(theirs).toMatchObject({ seeds: ["http://a.test/", "http://b.test/x"], limit: 7, workers: 3, pageLoadTimeout: 12, pageExtraDelay: 1.5, maxPageRetries: 5, crawlId: "the-id", collection: "the-coll", generateWACZ: true });
    expect(theirs.include.map((rx) => rx.source)).toEqual(["a\\.test", "b\\.test"]);
    expect(optionsFrom(["--url", "http://a.test/", "--generateWacz"]).generateWACZ).toBe(true);
    expect(optionsFrom(["--url", "http://a.test/", "--sitemap", "/news.xml"]).sitemap?.url).toBe("/news.xml");
  });

  it("--headless is accepted without a warning (we are headless by default)", () => {
    expect(optionsFrom(["--url", "http://a.test/", "--headless"]).headless).toBe(true);
    expect(warningsFrom(["--url", "http://a.test/", "--headless"])).toEqual([]);
  });

  it("--seeds and --url take space-separated lists, as browsertrix-crawler's arrays do", () => {
    expect(optionsFrom(["--seeds", "http://a.test/", "http://b.test/", "--url", "http://c.test/", "http://d.test/", "--workers", "1"]).seeds)
      .toEqual(["http://c.test/", "http://d.test/", "http://a.test/", "http://b.test/"]);
  });

  it("flags that cannot apply are accepted with one warning each, naming the flag and why (--qaSource: the qa command)", () => {
    const warnings = warningsFrom(["--url", "http://a.test/", "--waitUntil", "load,networkidle0", "--qaSource", "x.wacz", "--qaDebugImageDiff", "--mobileDevice", "Pixel 2",
      "--warcinfo.operator", "Jane Doe", "--selectLinks", "a[href]->href", "--clickSelector", "a"]);
    expect(warnings).toEqual([
      `--qaSource accepted for browsertrix-crawler compatibility but not applied: ${CANNOT_APPLY.qaSource}`,
    ]);
  });

  it("the autoclick behavior runs when named (not by default), with --clickSelector; no warning", () => {
    const args = ["--url", "http://a.test/", "--behaviors", "autoscroll,autoclick,siteSpecific", "--clickSelector", "button.more"];
    expect(optionsFrom(args).behaviors).toEqual(["autoscroll", "autoclick", "siteSpecific"]);
    expect(optionsFrom(args).linkBehavior.clickSelector).toBe("button.more");
    expect(warningsFrom(args)).toEqual([]);
    expect(optionsFrom(["--url", "http://a.test/", "--config", file("behaviors: autoclick\n")]).behaviors).toEqual(["autoclick"]);
    expect(optionsFrom(["--url", "http://a.test/"]).behaviors).toEqual(["autoscroll", "autoplay", "autofetch", "siteSpecific"]);
  });

  it("--logging values of browsertrix-crawler's that change nothing here are said so", () => {
    expect(warningsFrom(["--url", "http://a.test/", "--logging", "stats,jserrors,debug"])).toEqual(["accepted for browsertrix-crawler compatibility but not implemented yet: --logging jserrors"]);
    expect(warningsFrom(["--url", "http://a.test/", "--logging", "stats,stderr-json"])).toEqual([]);
  });

  it("--logLevel takes browsertrix-crawler's list of levels: the lowest one listed", () => {
    expect(optionsFrom(["--url", "http://a.test/", "--logLevel", "warn,error,fatal"]).logLevel).toBe("warn");
    expect(optionsFrom(["--url", "http://a.test/", "--config", file("logLevel: [debug, info, warn, error, fatal]\n")]).logLevel).toBe("debug");
    expect(optionsFrom(["--url", "http://a.test/", "--config", file("logLevel: error\n")]).logLevel).toBe("error");
  });

  it("--text final-to-warc and --screenshot fullPageFinal are ours (text and screenshots are taken after behaviors)", () => {
    const options = optionsFrom(["--url", "http://a.test/", "--text", "final-to-warc", "--screenshot", "view,fullPageFinal"]);
    expect(options.text).toEqual(["to-warc"]);
    expect(options.screenshot).toEqual(["view", "fullPage"]);
  });
});

describe("browsertrix-crawler names in --config", () => {
  it("primary names and aliases are keys, with our keys' meaning", () => {
    const theirs = optionsFrom(["--config", file([
      "seeds: [http://a.test/]", "pageLimit: 9", "useRobots: true", "scopeIncludeRx: [a\\.test]", "scopeExcludeRx: x", "delay: 1",
      "timeout: 30", "retries: 1", "generatewacz: true", "id: cid", "c: coll", "desc: hello", "sitemap: true", "sitemapFrom: '2024'",
    ].join("\n") + "\n")]);
    const ours = optionsFrom(["--url", "http://a.test/", "--limit", "9", "--robots", "--include", "a\\.test", "--exclude", "x", "--pageExtraDelay", "1",
      "--pageLoadTimeout", "30", "--maxPageRetries", "1", "--generateWACZ", "--crawlId", "cid", "--collection", "coll", "--description", "hello",
      "--useSitemap", "--sitemapFromDate", "2024"]);
    // Only what a --saveState file would write back differs: the config's keys, or the flags given.
    const withoutSaved = (o: typeof ours) => ({ ...o, state: { ...o.state, configToSave: {} } });
    expect(withoutSaved(theirs)).toEqual(withoutSaved(ours));
  });

  it("a flag on the command line wins over the config key of any of its spellings", () => {
    expect(optionsFrom(["--limit", "3", "--config", file("url: http://a.test/\npageLimit: 9\n")]).limit).toBe(3);
    expect(optionsFrom(["--pageLimit", "4", "--config", file("url: http://a.test/\nlimit: 9\n")]).limit).toBe(4);
  });

  it("per-seed allowHash, sitemap and auth", () => {
    const config = file([
      "seeds:",
      "  - url: http://a.test/app/",
      "    allowHash: true",
      "    sitemap: true",
      "  - url: http://b.test/",
      "    auth: user:secret",
    ].join("\n") + "\n");
    const options = optionsFrom(["--config", config]);
    expect(options.seedScopes.map((s) => s.allowHash)).toEqual([true, false]);
    expect(options.sitemap).toEqual({ url: null, fromDate: null, toDate: null });
    expect(warningsFrom(["--config", config])).toEqual([
      `--config ${config}: seeds[1].auth: per-seed auth is not supported yet (accepted for browsertrix-crawler compatibility): the seed is crawled without credentials`,
      `--config ${config}: a seed's own sitemap is read for every seed (sitemap reading is crawl-wide here: --useSitemap)`,
    ]);
  });

  it("keys that cannot apply are warned about when they ask for something; browsertrix defaults are not", () => {
    const config = file("url: http://a.test/\nqaSource: x.wacz\nqaDebugImageDiff: true\nlang: en\nwarcInfo: {operator: Jane}\nfailOnFailedSeed: false\nmaxPageLimit: 0\nblockRules: []\nhealthCheckPort: 0\ndedupePagesMinDepth: 0\n");
    expect(warningsFrom(["--config", config])).toEqual([
      `--qaSource accepted for browsertrix-crawler compatibility but not applied: ${CANNOT_APPLY.qaSource}`,
    ]);
    expect(warningsFrom(["--url", "http://a.test/", "--healthCheckPort", "0", "--saveState", "partial"])).toEqual([]);
  });

  it("--warcInfo's string form: \"name: value\" lines are fields, on the command line and in --config; the rest warned about", () => {
    expect(optionsFrom(["--url", "http://a.test/", "--warcInfo", "operator: ONB", "--warcInfo", "isPartOf=Web: archive", "--warcInfo"]).output.warcInfo)
      .toEqual({ operator: "ONB", isPartOf: "Web: archive" });
    const config = file('url: http://a.test/\nwarcInfo: "operator: ONB\\ndescription: domain crawl\\njunk line"\n');
    expect(optionsFrom(["--config", config]).output.warcInfo).toEqual({ operator: "ONB", description: "domain crawl" });
    expect(warningsFrom(["--config", config])).toEqual(['--warcInfo "junk line" ignored: not a "name: value" or name=value field']);
    expect(warningsFrom(["--url", "http://a.test/", "--warcInfo", "--warcInfo", "a b=c"])).toEqual([
      "--warcInfo without a field ignored",
      '--warcInfo "a b=c" ignored: not a "name: value" or name=value field',
    ]);
  });

  it("loads the JSON the Browsertrix service writes (crawl-config.json)", () => {
    const json = file(JSON.stringify({
      seeds: [
        { url: "https://a.test/", scopeType: "prefix", depth: 2, extraHops: 1, sitemap: false, include: [], exclude: ["logout"] },
        { url: "https://b.test/page", scopeType: "page", include: null, exclude: null },
      ],
      scopeType: "prefix", include: [], exclude: ["\\.ics$"], depth: -1, extraHops: 0, limit: 50, pageLimit: null, maxPageLimit: 100,
      behaviorTimeout: 60, pageLoadTimeout: 45, pageExtraDelay: 0, postLoadDelay: 0, behaviors: "autoscroll,autoplay,autofetch,siteSpecific",
      lang: "de", blockAds: false, userAgent: null, useSitemap: false, failOnFailedSeed: false, failOnContentCheck: false,
      selectLinks: ["a[href]->href"], clickSelector: "a", saveStorage: false, workers: 2, useRobots: false, logging: "stats,behaviors",
      profile: null, customBehaviors: [], headless: true, combineWARC: false, alwaysAddBehaviorLinks: false, seedFileId: "0f6c8a4e-1b7c-4a51-9e5a-3d2f1c0b9a87",
    }), "json");
    const program = quietProgram();
    const options = resolveCrawlOptions(crawlFlags(program, ["--config", json], "user", {}), {});
    expect(options.seeds).toEqual(["https://a.test/", "https://b.test/page"]);
    expect(options.seedScopes.map((s) => [s.scopeType, s.depth, s.extraHops, s.exclude.map((rx) => rx.source)])).toEqual([
      ["prefix", 2, 1, ["logout"]], ["page", -1, 0, ["\\.ics$"]],
    ]);
    expect(options).toMatchObject({ limit: 50, behaviorTimeout: 60, pageLoadTimeout: 45, workers: 2, robots: null, sitemap: null });
    expect(compatWarnings(program)).toEqual([
      `--config ${json}: seedFileId ignored: the Browsertrix service's id of an uploaded seed file (it passes the file itself as seedFile)`,
      "accepted for browsertrix-crawler compatibility but not implemented yet: --logging behaviors",
    ]);
  });
});

describe("CRAWL_ARGS", () => {
  it("is split as a shell splits words, without expanding anything", () => {
    expect(splitShellWords(` --title "My crawl"  --desc 'it''s' --a=\\"b\\" --x="y z"w $HOME `)).toEqual(["--title", "My crawl", "--desc", "its", '--a="b"', "--x=y zw", "$HOME"]);
    expect(() => splitShellWords(`--title "open`)).toThrow(/unterminated " quote/);
  });

  it("comes after the command line, as browsertrix-crawler appends it", () => {
    const options = optionsFrom(["--url", "http://a.test/", "--workers", "2", "--include", "one"], { CRAWL_ARGS: `--workers 3 --include two --title "A title" --headless` });
    expect(options).toMatchObject({ workers: 3, title: "A title" });
    expect(options.include.map((rx) => rx.source)).toEqual(["one", "two"]);
  });

  it("a bad CRAWL_ARGS is one line and the usage exit code", async () => {
    const result = await runCli("crawl", ["--url", "http://127.0.0.1:9/"], { env: { CRAWL_ARGS: "--workers 'two" } });
    expect(result.code).toBe(4);
    expect(result.stderr).toBe("crawl: CRAWL_ARGS: unterminated ' quote\n");
  });

  it("the built CLI accepts every browsertrix-crawler spelling at once and stops only for the missing seed", async () => {
    const args = BTX_FLAGS.filter((f) => !["--seeds", "--seedFile", "--config"].includes(f.spellings[0]))
      .flatMap(({ spellings, type }) => spellings.flatMap((s) => sampleArgs(s, type)));
    const result = await runCli("crawl", args);
    expect(result.stderr.trim().split("\n").pop()).toBe("crawl: no seed URL given: use --url URL (or --seeds, --seedFile)");
    expect(result.code).toBe(4);
  });
});
