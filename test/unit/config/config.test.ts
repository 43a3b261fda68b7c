import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { load } from "js-yaml";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { OptionsError, resolveCrawlOptions, type CrawlOptions } from "../../../src/config/crawlOptions.js";

const dir = mkdtempSync(join(tmpdir(), "crawl-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function yamlFile(text: string): string {
  const path = join(dir, `config-${++files}.yaml`);
  writeFileSync(path, text);
  return path;
}

function quietProgram() {
  return buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
}

function optionsFrom(args: string[]): CrawlOptions {
  return resolveCrawlOptions(crawlFlags(quietProgram(), args, "user"), {});
}

function configError(args: string[]): string {
  try {
    optionsFrom(args);
  } catch (err) {
    if (err instanceof OptionsError) return err.message;
    throw err;
  }
  throw new Error("expected an OptionsError");
}

const sources = (rxs: RegExp[]) => rxs.map((rx) => rx.source);

describe("--config YAML", () => {
  it("loads the documented example: every key, with per-seed scopes", () => {
    const options = optionsFrom(["--config", "docs/crawl.example.yaml"]);
    expect(options).toMatchObject({
      collection: "example-weekly",
      crawlId: "example-weekly",
      title: "Example.org, weekly capture",
      description: "Public pages of example.org and its blog.",
      seeds: ["https://example.org/", "https://blog.example.org/2024/", "https://example.org/annual-report.html"],
      scopeType: "host",
      extraHops: 1,
      depth: -1,
      limit: 5000,
      timeLimit: 3600,
      sizeLimit: 20_000_000_000,
      workers: 4,
      pageLoadTimeout: 60,
      netIdleWait: 5,
      maxPageRetries: 2,
      pageExtraDelay: 0.5,
      minHostInterval: 1,
      generateWACZ: true,
      rolloverSize: 1_000_000_000,
      dedupeMinSize: 2000,
      logging: ["stats"],
      logLevel: "info",
    });
    expect(sources(options.exclude)).toEqual(["\\/logout", "\\.ics$"]);
    const [first, blog, report] = options.seedScopes;
    expect(first).toMatchObject({ scopeType: "host", depth: -1, extraHops: 1 });
    expect(sources(first.exclude)).toEqual(["\\/logout", "\\.ics$"]);
    // A seed's own values replace the flags' for that seed; the ones it does not set are the flags'.
    expect(blog).toMatchObject({ scopeType: "prefix", depth: 2, extraHops: 1 });
    expect(sources(blog.exclude)).toEqual(["\\/tag\\/", "[?&]replytocom="]);
    expect(report).toMatchObject({ scopeType: "page", depth: -1 });
  });

  it("the user guide's --config page shows the same example", () => {
    const page = readFileSync("docs/user-guide/yaml-config.md", "utf8");
    const block = /## A full example[\s\S]*?```yaml\n([\s\S]*?)```/.exec(page)?.[1];
    expect(load(block ?? "")).toEqual(load(readFileSync("docs/crawl.example.yaml", "utf8")));
  });

  it("command-line flags win over the file, key by key", () => {
    const path = yamlFile("seeds: [http://a.test/]\nworkers: 3\nexclude: [one, two]\ngenerateWACZ: true\ntitle: from file\n");
    const options = optionsFrom(["--config", path, "--workers", "5", "--exclude", "cli"]);
    expect(options.workers).toBe(5);
    expect(sources(options.exclude)).toEqual(["cli"]);
    expect(options.generateWACZ).toBe(true);
    expect(options.title).toBe("from file");
    // The flags' defaults do not count as given: the file's value is used.
    expect(optionsFrom(["--config", yamlFile("url: http://a.test/\ncwd: out\ndepth: 3\n")])).toMatchObject({ cwd: resolve("out"), depth: 3 });
  });

  it("takes natural YAML values: numbers, booleans, lists, comma lists, seeds from --url too", () => {
    const path = yamlFile([
      "url: [http://a.test/x, http://b.test/]",
      "seeds: http://c.test/, http://d.test/",
      "pageLoadTimeout: 30",
      "logging: [stats, debug]",
      "headful: false",
      "include: [a, 'b$']",
      "scopeType: custom",
      "",
    ].join("\n"));
    const options = optionsFrom(["--config", path]);
    expect(options.seeds).toEqual(["http://a.test/x", "http://b.test/", "http://c.test/", "http://d.test/"]);
    expect(options).toMatchObject({ pageLoadTimeout: 30, logging: ["stats", "debug"], logLevel: "debug", headless: true, scopeType: "custom" });
    expect(sources(options.include)).toEqual(["a", "b$"]);
  });

  it("--allowAddresses: categories and IP ranges, from flags (comma lists, repeated) and YAML lists; none by default", () => {
    expect(optionsFrom(["--url", "http://a.test/"]).allowAddresses).toEqual({ categories: [], ranges: [] });
    expect(optionsFrom(["--url", "http://a.test/", "--allowAddresses", "private,10.9.0.0/16", "--allowAddresses", "169.254.169.254"]).allowAddresses).toEqual({
      categories: ["private"], ranges: ["10.9.0.0/16", "169.254.169.254"],
    });
    expect(optionsFrom(["--config", yamlFile("url: http://a.test/\nallowAddresses: [loopback, 'fd00::/8']\n")]).allowAddresses).toEqual({ categories: ["loopback"], ranges: ["fd00::/8"] });
  });

  it("a seed with its own include is custom-scoped, as in browsertrix-crawler", () => {
    const path = yamlFile("seeds:\n  - url: http://a.test/x/\n    include: '^http://a\\.test/(x|y)/'\n  - http://b.test/\n");
    const options = optionsFrom(["--config", path]);
    expect(options.seedScopes[0]).toMatchObject({ scopeType: "custom" });
    expect(sources(options.seedScopes[0].include)).toEqual(["^http:\\/\\/a\\.test\\/(x|y)\\/"]);
    expect(options.seedScopes[1]).toMatchObject({ scopeType: "prefix", include: [] });
  });

  it("any option of the program is a key, so flags added later are keys too", () => {
    const program = quietProgram()
      .option("--someNewFlag <value>", "added by a later feature")
      .option("--no-sandbox", "a negated flag: its key is the value's name")
      .option("--tags <tags...>", "a variadic flag");
    const flags = crawlFlags(program, ["--config", yamlFile("url: http://a.test/\nsomeNewFlag: 7\nsandbox: false\ntags: [a, b]\n")], "user") as Record<string, unknown>;
    expect(flags).toMatchObject({ someNewFlag: "7", sandbox: false, tags: ["a", "b"] });
  });

  it.each([
    ["pageLoadTimout: 5\n", /^--config \S+: unknown key "pageLoadTimout" \(did you mean "pageLoadTimeout"\?\)$/],
    ["frobnicate: true\n", /^--config \S+: unknown key "frobnicate"$/],
    ["version: 2\n", /unknown key "version"/],
    ["seeds:\n  - url: http://a.test/\n    sitemaps: true\n", /seeds\[0\]: unknown key "sitemaps"/],
    ["seeds:\n  - scopeType: page\n", /seeds\[0\] has no url/],
    ["seeds:\n  - url: http://a.test/\n    depth: deep\n", /^seed http:\/\/a.test\/: depth must be a whole number, got "deep"$/],
    ["seeds:\n  - url: http://a.test/\n    scopeType: galaxy\n", /^seed http:\/\/a.test\/: scopeType must be one of/],
    ["seeds:\n  - url: http://a.test/\n    exclude: ['(']\n", /^seed http:\/\/a.test\/: exclude is not a valid regular expression/],
    ["url: http://a.test/\nlogLevel: loud\n", /^--logLevel must be debug, info, warn or error \(or a list of them\), got "loud"$/],
    ["url: http://a.test/\ngenerateWACZ: yes\n", /generateWACZ must be true or false, got "yes"/],
    ["url: http://a.test/\ntitle: true\n", /title needs a value/],
    ["url: http://a.test/\nworkers: {n: 2}\n", /workers must be a string, number or list/],
    ["url: http://a.test/\nworkers: many\n", /^--workers must be a whole number, got "many"$/],
    ["url: http://a.test/\nworkers: 2\n  limit: 3\n", /^--config \S+ line 3: not valid YAML: /],
    ["- http://a.test/\n", /must be a mapping of flag names to values/],
  ])("rejects %j with one clear line", (text, message) => {
    const error = configError(["--config", yamlFile(text)]);
    expect(error).toMatch(message);
    expect(error).not.toContain("\n");
  });

  it("a missing config file is one clear line", () => {
    expect(configError(["--config", join(dir, "nope.yaml")])).toBe(`--config ${join(dir, "nope.yaml")}: no such file`);
  });
});

describe("URL and rate-limit flags (issue 15, items 7-9)", () => {
  it("defaults: fragments dropped, no redirected seeds, 429 and 503 are rate limits retried 4 times, backed off up to 300 s", () => {
    const options = optionsFrom(["--url", "http://a.test/"]);
    expect(options).toMatchObject({ allowHashUrls: false, addRedirectedSeeds: false, rateLimit: { statusCodes: [429, 503], maxRetries: 4, timeoutSeconds: 300 } });
    expect(options.seedScopes[0].allowHash).toBe(false);
  });

  it("from flags or a --config file (browsertrix-crawler's names); -1 retries for ever", () => {
    const fromFile = optionsFrom(["--config", yamlFile("url: http://a.test/\nallowHashUrls: true\naddRedirectedSeeds: true\nrateLimitStatusCodes: [429, 503, 403]\nrateLimitMaxRetries: -1\nrateLimitTimeout: 60\n")]);
    expect(fromFile).toMatchObject({ allowHashUrls: true, addRedirectedSeeds: true, rateLimit: { statusCodes: [429, 503, 403], maxRetries: -1, timeoutSeconds: 60 } });
    expect(fromFile.seedScopes[0].allowHash).toBe(true);
    expect(optionsFrom(["--url", "http://a.test/", "--rateLimitStatusCodes", "429", "--rateLimitStatusCodes", "503,520"]).rateLimit.statusCodes).toEqual([429, 503, 520]);
  });

  it.each([
    [["--rateLimitStatusCodes", "200"], /--rateLimitStatusCodes takes HTTP status codes from 400 to 599, got "200"/],
    [["--rateLimitStatusCodes", "600"], /from 400 to 599, got "600"/],
    [["--rateLimitStatusCodes", "busy"], /from 400 to 599, got "busy"/],
    [["--rateLimitMaxRetries", "-2"], /--rateLimitMaxRetries must be a whole number, -1 for no limit/],
    [["--rateLimitMaxRetries", "1.5"], /--rateLimitMaxRetries must be a whole number/],
    [["--rateLimitTimeout", "0"], /--rateLimitTimeout must be a number of seconds above 0/],
  ])("%j is refused", (args, message) => {
    expect(configError(["--url", "http://a.test/", ...args])).toMatch(message);
  });
});

describe("per-seed budgets and the per-host page cap (issue 29, items 4 and 5)", () => {
  it("a config seed's own limit and sizeLimit, else --seedPageLimit and --seedSizeLimit; none by default", () => {
    expect(optionsFrom(["--url", "http://a.test/"]).budgets).toEqual({ seeds: [{ pages: 0, bytes: 0 }], maxPagesPerHost: 0 });
    const path = yamlFile([
      "seeds:",
      "  - url: http://a.test/",
      "    limit: 20",
      "    sizeLimit: 100MB",
      "  - url: http://b.test/",
      "    limit: 0",
      "  - http://c.test/",
      "seedPageLimit: 30",
      "seedSizeLimit: 1GB",
      "maxPagesPerHost: 50",
    ].join("\n"));
    expect(optionsFrom(["--config", path]).budgets).toEqual({
      seeds: [{ pages: 20, bytes: 100_000_000 }, { pages: 0, bytes: 1_000_000_000 }, { pages: 30, bytes: 1_000_000_000 }],
      maxPagesPerHost: 50,
    });
    // The flags on the command line set the default for seeds without their own budget.
    expect(optionsFrom(["--config", path, "--seedPageLimit", "5"]).budgets.seeds.map((b) => b.pages)).toEqual([20, 0, 5]);
  });

  it("a bad budget is one line naming the seed or the flag", () => {
    expect(configError(["--config", yamlFile("seeds:\n  - url: http://a.test/\n    sizeLimit: huge\n")])).toBe('seed http://a.test/: sizeLimit must be a size like 1000000, 64KB, 10MB or 1GB, got "huge"');
    expect(configError(["--config", yamlFile("seeds:\n  - url: http://a.test/\n    limit: [1, 2]\n")])).toMatch(/^--config \S+: seeds\[0\]\.limit must be a single value or a flat list, got \[1,2\]$/);
    expect(configError(["--url", "http://a.test/", "--maxPagesPerHost", "-1"])).toBe("--maxPagesPerHost must be at least 0, got -1");
  });
});
