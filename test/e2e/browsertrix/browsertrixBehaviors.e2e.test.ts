/**
 * browsertrix-crawler's link and behavior flags, shown by what a crawl of a loopback site captures and
 * queues: --selectLinks (--linkSelector), --clickSelector with the autoclick behavior, --customBehaviors
 * (file, folder, URL, git repository), --alwaysAddBehaviorLinks, and --allowHashUrls on a hash-routed app.
 *
 * The site's parts (/links/, /click/, /custom/, /hash/) link only within themselves, so one crawl whose
 * flags suit several tests crawls their parts together, and each test reads the paths of its own part.
 * The crawls are queued in beforeAll, two at a time; the usage errors run in one node process.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { JobSlots } from "../../helpers/jobSlots.js";
import { behaviorClass, startLinkBehaviorSite, type LinkBehaviorSite } from "../../helpers/linkBehaviorSite.js";
import { crawlUsageRuns, type UsageRun } from "../../helpers/usageRuns.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { listedPaths } from "../../helpers/pageLists.js";

let site: LinkBehaviorSite;
let cwd: string;

interface Crawl {
  result: CliResult;
  /** Paths of the pages listed (pages.jsonl and extraPages.jsonl), sorted. */
  pages: string[];
  /** Paths of the site's URLs with a response record, sorted. */
  captured: string[];
}

let runs = 0;
async function crawl(seeds: string[], args: string[]): Promise<Crawl> {
  const collection = `c${++runs}`;
  const result = await runCli("crawl", [
    ...seeds.flatMap((s) => ["--url", site.url + s]), "--collection", collection, "--cwd", cwd, "--netIdleWait", "2", "--behaviorTimeout", "30", ...args,
  ], { timeoutMs: 240_000 });
  const dir = join(cwd, "collections", collection);
  // Seeds are listed in pages.jsonl, the pages found from them in extraPages.jsonl.
  const pages = listedPaths(dir, (u) => u.pathname + u.hash);
  const archive = join(dir, "archive");
  const records = existsSync(archive) ? readdirSync(archive).filter((f) => f.includes(".warc")).flatMap((f) => readWarcRecords(join(archive, f))) : [];
  const captured = [...new Set(records.filter((r) => r.headers.get("warc-type") === "response").map((r) => new URL(r.headers.get("warc-target-uri") ?? "").pathname))].sort();
  return { result, pages, captured };
}

/** The paths of one part of the site. */
const under = (paths: string[], prefix: string) => paths.filter((p) => p.startsWith(prefix));

function expectOk(crawled: Crawl): void {
  expect(crawled.result.code, crawled.result.stderr.slice(-3000)).toBe(0);
}

function expectBadUsage(result: UsageRun, message: RegExp): void {
  expect(result.code, result.stderr).toBe(4);
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(message);
}

const BAD_SELECTORS: [string[], RegExp][] = [
  [["--selectLinks", "div[->href"], /--selectLinks: "div\[" is not a valid CSS selector/],
  [["--selectLinks", "a[href]->"], /--selectLinks: "a\[href\]->" must be selector->property or selector->@attribute/],
  [["--clickSelector", "button["], /--clickSelector: "button\[" is not a valid CSS selector/],
];

let behaviorsDir: string;
let file: string;
let folder: string;
let repo: string;
/** A behavior that fetches on /custom/a and adds a link out of every seed's scope. */
let addsLink: string;
let badBehaviors: [string[], RegExp][];

let shared: {
  /** Every default: links of /links/, routes of /hash/. */
  defaults: Promise<Crawl>;
  /** --linkSelector with a[href] among its entries, and --allowHashUrls: links of /links/, routes of /hash/. */
  linkSelectorHashUrls: Promise<Crawl>;
  selectLinks: Promise<Crawl>;
  /** autoclick with its default selector on /click/, and a custom behavior adding a link on /custom/a. */
  autoclick: Promise<Crawl>;
  /** autoclick with --clickSelector button on /click/, and the custom behaviors of every kind on /custom/a-d. */
  clickButtonCustom: Promise<Crawl>;
  /** The other behaviors, siteSpecific with no custom behavior: /click/ and /custom/a. */
  noAutoclickNoCustom: Promise<Crawl>;
  alwaysAddBehaviorLinks: Promise<Crawl>;
  usage: Promise<UsageRun[]>;
};

beforeAll(async () => {
  site = await startLinkBehaviorSite();
  cwd = mkdtempSync(join(tmpdir(), "btx-behaviors-e2e-"));

  behaviorsDir = join(cwd, "behaviors");
  file = join(behaviorsDir, "single.js");
  folder = join(behaviorsDir, "folder");
  repo = join(behaviorsDir, "repo");
  mkdirSync(join(folder, "nested"), { recursive: true });
  writeFileSync(file, behaviorClass("FromFile", "/custom/a", "/custom/from-file.json"));
  // A folder: every .js file in it (nested ones too) is loaded; only the one whose isMatch() is true runs.
  writeFileSync(join(folder, "nested", "b.js"), behaviorClass("FromFolder", "/custom/b", "/custom/from-folder.json"));
  writeFileSync(join(folder, "other.js"), behaviorClass("NeverMatches", "/nowhere", "/custom/never.json"));
  writeFileSync(join(folder, "notes.txt"), "not a behavior");
  // A git repository (a local one: git+file://), its behaviors in a sub-folder chosen with path=.
  mkdirSync(join(repo, "behaviors"), { recursive: true });
  writeFileSync(join(repo, "behaviors", "d.js"), behaviorClass("FromGit", "/custom/d", "/custom/from-git.json"));
  const git = (...args: string[]) => execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "behaviors");
  addsLink = join(cwd, "AddsLink.js");
  writeFileSync(addsLink, behaviorClass("AddsLink", "/custom/a", "/custom/from-file.json", "/elsewhere/added-by-behavior"));
  const broken = join(cwd, "broken.js");
  writeFileSync(broken, "class Broken { static id = ; }");
  badBehaviors = [
    [["--customBehaviors", join(cwd, "no-such-behavior.js")], /--customBehaviors .*no-such-behavior\.js: no such file or folder/],
    [["--customBehaviors", `${site.url}/missing.js`], /--customBehaviors http:\/\/127\.0\.0\.1:\d+\/missing\.js cannot be fetched: HTTP 404/],
    [["--customBehaviors", `git+file://${join(cwd, "no-repo")}`], /--customBehaviors git\+file:.*no-repo cannot be cloned/],
    [["--customBehaviors", broken], /--customBehaviors: .*broken\.js is not a behavior class/],
    // A downloaded copy is named by its URL.
    [["--customBehaviors", `${site.url}/behaviors/broken.js`], /--customBehaviors: http:\/\/127\.0\.0\.1:\d+\/behaviors\/broken\.js is not a behavior class/],
    [["--customBehaviors", join(cwd, "behaviors", "folder", "notes.txt")], /not a \.js behavior file/],
  ];

  const slots = new JobSlots(2);
  const queue = (seeds: string[], args: string[]) => slots.run(() => crawl(seeds, args));
  const customBehaviors = ["--customBehaviors", file, "--customBehaviors", folder, "--customBehaviors", `${site.url}/behaviors/from-url.js`,
    "--customBehaviors", `git+file://${repo}?branch=main&path=behaviors`];
  shared = {
    clickButtonCustom: queue(["/click/", "/custom/a", "/custom/b", "/custom/c", "/custom/d"], [
      "--behaviors", "siteSpecific,autoclick", "--clickSelector", "button", "--scopeType", "page", ...customBehaviors,
    ]),
    autoclick: queue(["/custom/a", "/click/"], ["--behaviors", "siteSpecific,autoclick", "--scopeType", "page", "--customBehaviors", addsLink]),
    alwaysAddBehaviorLinks: queue(["/custom/a", "/click/"], [
      "--behaviors", "siteSpecific,autoclick", "--scopeType", "page", "--alwaysAddBehaviorLinks", "--exclude", "/click/next", "--customBehaviors", addsLink,
    ]),
    noAutoclickNoCustom: queue(["/click/", "/custom/a"], ["--behaviors", "autoscroll,autoplay,autofetch,siteSpecific", "--scopeType", "page"]),
    defaults: queue(["/links/", "/hash/"], [...NO_BEHAVIORS]),
    linkSelectorHashUrls: queue(["/links/", "/hash/"], [...NO_BEHAVIORS, "--linkSelector", "div[data-href]->data-href,a[href]", "--allowHashUrls"]),
    selectLinks: queue(["/links/"], [...NO_BEHAVIORS, "--selectLinks", "div[data-href]->@data-href", "--selectLinks", "span[data-href]->data-href"]),
    usage: slots.run(() => crawlUsageRuns([...BAD_SELECTORS, ...badBehaviors].map(([args]) => ["--url", site.url + "/links/", "--cwd", cwd, ...args]))),
  };
});
afterAll(async () => {
  // Let the queued crawls end before their site and folder go.
  if (shared) await Promise.allSettled(Object.values(shared));
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("--selectLinks / --linkSelector", () => {
  it("by default, links are a[href] (and area[href]) of every frame, the frame's own included", async () => {
    const crawled = await shared.defaults;
    expectOk(crawled);
    expect(under(crawled.pages, "/links/")).toEqual(["/links/", "/links/via-a", "/links/via-frame-a"]);
  }, 250_000);

  it("replaces the default: only what the selectors find is crawled, in every frame (->@attribute, ->property falling back to the attribute)", async () => {
    const crawled = await shared.selectLinks;
    expectOk(crawled);
    expect(crawled.pages).toEqual(["/links/", "/links/via-data", "/links/via-frame-data", "/links/via-span"]);
  }, 250_000);

  it("--linkSelector is the same flag; entries are comma-separated", async () => {
    const crawled = await shared.linkSelectorHashUrls;
    expectOk(crawled);
    expect(under(crawled.pages, "/links/")).toEqual(["/links/", "/links/via-a", "/links/via-data", "/links/via-frame-a", "/links/via-frame-data"]);
  }, 250_000);

  it.each(BAD_SELECTORS.map(([args, message], i) => [args, message, i] as const))("%j is a usage error (exit 4) with a one-line message", async (_args, message, i) => {
    expectBadUsage((await shared.usage)[i], message);
  }, 250_000);
});

describe("autoclick behavior and --clickSelector", () => {
  const CLICK_FETCHES = ["/click/route-data.json", "/click/button.json"];
  const clickFetched = (c: Crawl) => c.captured.filter((p) => CLICK_FETCHES.includes(p));

  it("clicks the page's links (default selector a): what their handlers load is archived, a link that would leave the page does not", async () => {
    const crawled = await shared.autoclick;
    expectOk(crawled);
    expect(clickFetched(crawled)).toEqual(["/click/route-data.json"]);
    // The plain link was clicked too, but leaving the page was refused: its document never loaded.
    expect(under(crawled.captured, "/click/")).toEqual(["/click/", "/click/route-data.json"]);
    expect(under(crawled.pages, "/click/")).toEqual(["/click/"]);
  }, 250_000);

  it("with --clickSelector button, the buttons are clicked instead", async () => {
    const crawled = await shared.clickButtonCustom;
    expectOk(crawled);
    expect(clickFetched(crawled)).toEqual(["/click/button.json"]);
  }, 250_000);

  it("without autoclick nothing is clicked", async () => {
    const crawled = await shared.noAutoclickNoCustom;
    expectOk(crawled);
    expect(clickFetched(crawled)).toEqual([]);
  }, 250_000);
});

describe("--customBehaviors", () => {
  it("loads behavior classes from a file, a folder, a URL and a git repository: each runs on its page and what it fetched is archived", async () => {
    const crawled = await shared.clickButtonCustom;
    expectOk(crawled);
    expect(under(crawled.captured, "/custom/")).toEqual([
      "/custom/a", "/custom/b", "/custom/c", "/custom/d", "/custom/from-file.json", "/custom/from-folder.json", "/custom/from-git.json", "/custom/from-url.json",
    ]);
  }, 250_000);

  it("without them, nothing of theirs is fetched", async () => {
    const crawled = await shared.noAutoclickNoCustom;
    expectOk(crawled);
    expect(under(crawled.captured, "/custom/")).toEqual(["/custom/a"]);
  }, 250_000);

  it("a source that is missing, cannot be fetched or does not compile is a usage error (exit 4) with a one-line message", async () => {
    const results = (await shared.usage).slice(BAD_SELECTORS.length);
    expect(results).toHaveLength(badBehaviors.length);
    badBehaviors.forEach(([, message], i) => expectBadUsage(results[i], message));
  }, 250_000);
});

describe("--alwaysAddBehaviorLinks", () => {
  it("without it, links behaviors add are judged by the scope like any link: out of scope, not crawled", async () => {
    const crawled = await shared.autoclick;
    expectOk(crawled);
    expect(crawled.pages).toEqual(["/click/", "/custom/a"]);
  }, 250_000);

  it("with it, they are crawled whatever the scope (custom addLink, links autoclick clicked), unless excluded", async () => {
    const crawled = await shared.alwaysAddBehaviorLinks;
    expectOk(crawled);
    expect(crawled.pages).toEqual(["/click/", "/click/route", "/custom/a", "/elsewhere/added-by-behavior"]);
  }, 250_000);
});

describe("--allowHashUrls", () => {
  it("hash-routed pages are pages of their own: each route is loaded and what it fetches archived", async () => {
    const crawled = await shared.linkSelectorHashUrls;
    expectOk(crawled);
    expect(under(crawled.pages, "/hash/")).toEqual(["/hash/", "/hash/#/a", "/hash/#/b"]);
    expect(under(crawled.captured, "/hash/")).toEqual(["/hash/", "/hash/data-a.json", "/hash/data-b.json", "/hash/data-home.json"]);
  }, 250_000);

  it("without it, the routes are the same page as the seed: only its own data is archived", async () => {
    const crawled = await shared.defaults;
    expectOk(crawled);
    expect(under(crawled.pages, "/hash/")).toEqual(["/hash/"]);
    expect(under(crawled.captured, "/hash/")).toEqual(["/hash/", "/hash/data-home.json"]);
  }, 250_000);
});
