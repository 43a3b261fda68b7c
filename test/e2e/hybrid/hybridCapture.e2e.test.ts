import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTICLE_PATHS, browserResources, DOC_PATHS, FEED_PATHS, HUB_PATH, PRODUCT_PATHS, SPECIAL_ARTICLE_PATH, startTemplateSite, TEMPLATE_SITE_PAGES, type TemplateSite,
} from "../../../fixtures/templateSite.js";
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { listedPages } from "../../helpers/pageLists.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { replayPage, startReplayServer, type ReplayServer } from "../../helpers/replay.js";
import { httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// --captureMode hybrid on the template site (fixtures/templateSite.ts), one worker so that pages go in the hub's
// order: each template's first 2 pages browsed and learned from, every 4th page the guard lets through verified.
let site: TemplateSite;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
let report: { url: string; capture: string; template: string | null; purpose?: string; reason?: string; verify?: { missing: string[]; extra: string[]; outcome: string } }[];

const pathOf = (url: string) => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};
const responsePaths = (rs: RawRecord[]) => [...new Set(rs.filter((r) => r.headers.get("warc-type") === "response").map((r) => pathOf(r.headers.get("warc-target-uri")!)))].sort();

/** How each page is expected to be captured: [path, capture, purpose]. */
function expectedPlan(): [string, string, string | undefined][] {
  const plan: [string, string, string | undefined][] = [[HUB_PATH, "browser", "learn"]];
  // The first 2 learned, the third the template's first verify page; of the rest (static-eligible pages 1, 2, 3...),
  // every 4th verified, the others static.
  const learnedThenStatic = (paths: readonly string[]) => paths.forEach((path, i) => {
    const eligible = i - 2;
    plan.push(i < 2 ? [path, "browser", "learn"] : i === 2 || eligible % 4 === 0 ? [path, "browser", "verify"] : [path, "static", undefined]);
  });
  learnedThenStatic(DOC_PATHS);
  learnedThenStatic(ARTICLE_PATHS);
  // Its own template (it names one more script of the site): browsed to learn it.
  plan.push([SPECIAL_ARTICLE_PATH, "browser", "learn"]);
  // p3, the first page the guard lets through, is verified: it reveals the reviews fetch the learning pages never made,
  // and p4..p8 are back in the browser.
  PRODUCT_PATHS.forEach((path, i) => plan.push(i < 2 ? [path, "browser", "learn"] : i === 2 ? [path, "browser", "verify"] : [path, "browser", "fallen-back"]));
  // Scrolling the feed brought more: the template stays in the browser.
  FEED_PATHS.forEach((path, i) => plan.push([path, "browser", i < 2 ? "learn" : "guard"]));
  return plan;
}

beforeAll(async () => {
  site = await startTemplateSite();
  cwd = mkdtempSync(join(tmpdir(), "crawl-hybrid-"));
  crawl = await runCli("crawl", [
    "--url", site.url + HUB_PATH, "--collection", "hybrid", "--cwd", cwd, "--workers", "1", "--captureMode", "hybrid", "--hybridVerifyEvery", "4",
    "--text", "to-pages", "--generateWACZ", "--logLevel", "debug",
  ], { timeoutMs: 250_000 });
  const dir = join(cwd, "collections", "hybrid");
  records = readdirSync(join(dir, "archive")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
  report = existsSync(join(dir, "reports", "capture.jsonl")) ? readFileSync(join(dir, "reports", "capture.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line)) : [];
}, 260_000);

afterAll(async () => {
  await site?.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe("a hybrid crawl of the template site", () => {
  it("captures each page as its template says: learned, static, verified, refused by the guard, fallen back", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    expect(report.map((entry) => [pathOf(entry.url), entry.capture, entry.purpose])).toEqual(expectedPlan());
    const templateOf = (path: string) => report.find((entry) => pathOf(entry.url) === path)!.template;
    expect(new Set(DOC_PATHS.map(templateOf)).size).toBe(1);
    expect(new Set(ARTICLE_PATHS.map(templateOf)).size).toBe(1);
    expect(templateOf(SPECIAL_ARTICLE_PATH)).not.toBe(templateOf(ARTICLE_PATHS[0]!));
  });

  it("stores exactly what a browser-mode crawl stores", () => {
    const browserMode = new Set(TEMPLATE_SITE_PAGES.flatMap((p) => browserResources(p)));
    expect(responsePaths(records)).toEqual([...browserMode].sort());
    expect(records.filter((r) => r.headers.get("warc-type") === "response" && httpStatus(r) !== 200).map((r) => r.headers.get("warc-target-uri"))).toEqual([]);
  });

  it("fetches for each static page exactly what its browser capture holds that the crawl had not stored yet: derived and learned URLs included", () => {
    // One worker: a page's requests come after its document's and before the next page's document.
    const pages = new Set(TEMPLATE_SITE_PAGES);
    const stored = new Set<string>();
    const plan = new Map(expectedPlan().map(([path, capture]) => [path, capture]));
    let current: string | null = null;
    const segments = new Map<string, string[]>();
    for (const request of site.requests) {
      if (pages.has(request)) {
        current = request;
        segments.set(request, []);
      }
      segments.get(current!)!.push(request);
    }
    for (const path of TEMPLATE_SITE_PAGES) {
      const own = browserResources(path);
      if (plan.get(path) === "static") expect([...new Set(segments.get(path))].sort(), path).toEqual(own.filter((p) => !stored.has(p)).sort());
      for (const p of own) stored.add(p);
    }
    expect(plan.get("/articles/a4.html")).toBe("static");
    expect(segments.get("/articles/a4.html")).toContain("/api/articles/a4.json");
    expect(segments.get("/articles/a4.html")).toContain("/img/thumbs/a4.png");
  });

  it("asks the site for each document once, the browsed ones too (the browser renders the document fetched first)", () => {
    const documents = site.requests.filter((r) => TEMPLATE_SITE_PAGES.includes(r));
    expect(documents.sort()).toEqual([...TEMPLATE_SITE_PAGES].sort());
  });

  it("logs the fallback with the URL the static pass lacked", () => {
    const fallback = logLines(crawl.stderr).filter((line) => line.logLevel === "warn" && line.message.includes("falls back to the browser"));
    expect(fallback.map((line) => [line.details.page, line.details.missing])).toEqual([[`${site.url}/products/p3.html`, [`${site.url}/api/reviews/p3.json`]]]);
    expect(report.find((entry) => pathOf(entry.url) === "/products/p3.html")!.verify).toMatchObject({ missing: [`${site.url}/api/reviews/p3.json`], outcome: "fell-back" });
    // The docs' and articles' verify pages found nothing missing.
    expect(report.filter((entry) => entry.verify && !pathOf(entry.url).startsWith("/products/")).map((entry) => [pathOf(entry.url), entry.verify!.missing, entry.verify!.outcome]))
      .toEqual(["/docs/d3.html", "/docs/d7.html", "/articles/a3.html", "/articles/a7.html"].map((path) => [path, [], "matched"]));
  });

  it("lists static pages as browsed ones: title, load state, text; each page crawled line says how", () => {
    const listed = listedPages(join(cwd, "collections", "hybrid"));
    const d4 = listed.find((p) => pathOf(p.url) === "/docs/d4.html")!;
    const d1 = listed.find((p) => pathOf(p.url) === "/docs/d1.html")!;
    expect([d4.title, d4.loadState, d4.status, d4.mime]).toEqual(["Doc d4", d1.loadState, 200, "text/html"]);
    expect(d1.loadState).toBe(4);
    expect(d4.text).toBe(String(d1.text).replaceAll("d1", "d4"));
    const crawled = logLines(crawl.stderr).filter((line) => line.message === "page crawled");
    expect(crawled.filter((line) => line.details.capture === "static").map((line) => pathOf(String(line.details.url))).sort())
      .toEqual(expectedPlan().filter(([, capture]) => capture === "static").map(([path]) => path).sort());
  });
});

describe("static pages in ReplayWeb.page", () => {
  let replay: ReplayServer;
  beforeAll(async () => {
    replay = await startReplayServer(join(cwd, "collections", "hybrid"));
  }, 60_000);
  afterAll(async () => {
    await replay?.close();
  });

  it("replay with every image, and the text their scripts fetch", async () => {
    const cases = [["/articles/a4.html", "The text of article a4", ["/img/banner.png", "/img/thumbs/a4.png"]], ["/docs/d4.html", "Documentation page d4", ["/img/d4-1x.png", "/img/d4.png"]]] as const;
    for (const [path, text, images] of cases) {
      expect(expectedPlan().find(([planned]) => planned === path)![1], path).toBe("static");
      const page = await replayPage(replay, { source: "/archives/hybrid.wacz", url: site.url + path, waitForText: text, waitForImages: true, timeoutMs: 60_000 });
      expect(page.text, path).toContain(text);
      expect(page.images.length, path).toBeGreaterThan(0);
      expect(page.images.filter((image) => image.naturalWidth === 0).map((image) => image.src), path).toEqual([]);
      expect(page.images.map((image) => pathOf(image.src.replace(/^.*?\/\d{14}[a-z]{2}_\//, ""))).sort(), path).toEqual(images);
    }
  }, 150_000);
});

describe("a hybrid crawl with 4 workers on the defaults", () => {
  it("captures no page of a template before its first verify page is done: the products' reviews are all stored", async () => {
    const busy = await startTemplateSite();
    const busyCwd = mkdtempSync(join(tmpdir(), "crawl-hybrid-busy-"));
    try {
      const run = await runCli("crawl", ["--url", busy.url + HUB_PATH, "--collection", "busy", "--cwd", busyCwd, "--workers", "4", "--captureMode", "hybrid", "--logLevel", "debug"], { timeoutMs: 200_000 });
      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      const dir = join(busyCwd, "collections", "busy");
      const stored = responsePaths(readdirSync(join(dir, "archive")).flatMap((f) => readWarcRecords(join(dir, "archive", f))));
      expect(stored).toEqual([...new Set(TEMPLATE_SITE_PAGES.flatMap((p) => browserResources(p)))].sort());
      const lines = readFileSync(join(dir, "reports", "capture.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as { url: string; capture: string });
      expect(lines.filter((l) => pathOf(l.url).startsWith("/products/") && l.capture === "static")).toEqual([]);
      expect(lines.filter((l) => l.capture === "static").length).toBeGreaterThan(10);
      // Pages put back while their template's first pages were browsed kept their documents: each asked for once.
      expect(logLines(run.stderr).filter((line) => line.message.includes("page put back")).length).toBeGreaterThan(0);
      expect(busy.requests.filter((r) => TEMPLATE_SITE_PAGES.includes(r)).sort()).toEqual([...TEMPLATE_SITE_PAGES].sort());
    } finally {
      await busy.close();
      rmSync(busyCwd, { recursive: true, force: true });
    }
  }, 210_000);
});

describe("qa of a hybrid crawl", () => {
  it("scores a static page on its requests only (its crawl text is its document's), a browsed one on its text too", async () => {
    const run = await runCli("qa", ["--qaSource", join(cwd, "collections", "hybrid", "hybrid.wacz"), "--include", "/articles/a[14]\\.html$", "--cwd", cwd, "--collection", "qa"], { timeoutMs: 120_000 });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const qa = JSON.parse(readFileSync(join(cwd, "collections", "qa", "qa.json"), "utf8")) as { results: { url: string; scores: { text: number | null; resources: number } }[] };
    const scores = Object.fromEntries(qa.results.map((r) => [pathOf(r.url), r.scores]));
    expect(Object.keys(scores).sort()).toEqual(["/articles/a1.html", "/articles/a4.html"]);
    // a4 is static: its crawl text is "Loading the article...", replay shows the article's text its script fetched.
    expect(scores["/articles/a4.html"]).toMatchObject({ text: null, resources: 1 });
    expect(scores["/articles/a1.html"]).toMatchObject({ text: 1, resources: 1 });
  }, 130_000);
});

describe("two processes sharing one hybrid crawl", () => {
  let redis: TestRedis;
  let shared: TemplateSite;
  let sharedCwd: string;
  const codes: (number | null)[] = [];
  beforeAll(async () => {
    redis = await startTestRedis();
    shared = await startTemplateSite();
    sharedCwd = mkdtempSync(join(tmpdir(), "crawl-hybrid-shared-"));
    const args = [
      "dist/src/cli/crawl.js", "--url", shared.url + HUB_PATH, "--crawlId", "shared", "--collection", "shared", "--cwd", sharedCwd, "--captureMode", "hybrid", "--hybridVerifyEvery", "0",
      "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--workers", "2",
    ];
    const one = () => new Promise<number | null>((resolve) => spawn(process.execPath, args, { stdio: "ignore" }).on("exit", (code) => resolve(code)));
    codes.push(...(await Promise.all([one(), one()])));
  }, 250_000);
  afterAll(async () => {
    await shared?.close();
    await redis?.stop();
    rmSync(sharedCwd, { recursive: true, force: true });
  });

  it("learn each template once: 2 learning pages, 2 observations a template, in Redis and in their reports", async () => {
    expect(codes).toEqual([0, 0]);
    const keys = crawlStateKeys("shared");
    const state = await redis.client.hgetall(keys.templateState);
    const templates = [...new Set(Object.keys(state).map((field) => field.split(":")[0]!))];
    // hub, docs, articles, special, products, feeds
    expect(templates.length).toBe(6);
    const reports = readdirSync(join(sharedCwd, "collections", "shared", "reports")).filter((f) => f.startsWith("capture")).flatMap((f) =>
      readFileSync(join(sharedCwd, "collections", "shared", "reports", f), "utf8").trim().split("\n").map((line) => JSON.parse(line) as { url: string; template: string; capture: string; purpose?: string }));
    expect(reports.map((entry) => pathOf(entry.url)).sort()).toEqual([...TEMPLATE_SITE_PAGES].sort());
    for (const template of templates) {
      const pages = reports.filter((entry) => entry.template === template).length;
      const learning = Math.min(2, pages);
      expect([state[`${template}:slots`], state[`${template}:observed`]], template).toEqual([String(learning), String(learning)]);
      expect(reports.filter((entry) => entry.template === template && entry.purpose === "learn").length, template).toBe(learning);
    }
    // Which product pages teach their template depends on the processes' timing (one with reviews and one without
    // make the reviews page-specific); the docs' and articles' learning pages are alike whichever they are.
    const staticOf = (paths: readonly string[]) => reports.filter((entry) => entry.capture === "static" && paths.includes(pathOf(entry.url))).length;
    expect([staticOf(DOC_PATHS), staticOf(ARTICLE_PATHS)]).toEqual([DOC_PATHS.length - 2, ARTICLE_PATHS.length - 2]);
  });
});
