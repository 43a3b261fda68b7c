/**
 * QA (issue 18 §3): a real crawl of the QA fixture site with --qa, then the replay of its WACZ in
 * ReplayWeb.page. random.html's content comes from a URL with a random part (replay asks for another one,
 * which the archive lacks); offsite.html shows an image from another loopback host (127.0.0.2) that the
 * crawl blocks (--blockRules), so the archive lacks it; the other pages are whole (query.html's random
 * query parameter included: ReplayWeb.page's fuzzy matching serves it).
 */
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import puppeteer from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startQaSite, RANDOM_CONTENT, type QaSite } from "../../../fixtures/qaSite.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import type { QaPageResult, QaSummary } from "../../../src/qa/pageResult.js";

let site: QaSite;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let summary: QaSummary;
let results: Map<string, QaPageResult>;
let otherRequestsAfterCrawl: string[];

const collectionDir = () => join(cwd, "collections", "qa1");
const pageUrl = (name: string) => `${site.url}/qa/${name}.html`;
const WHOLE = ["index", "whole", "query"];

beforeAll(async () => {
  site = await startQaSite();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-qa-"));
  crawl = await runCli("crawl", [
    "--url", pageUrl("index"), "--collection", "qa1", "--cwd", cwd, "--qa", "--blockRules", "127\\.0\\.0\\.2",
    "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--logging", "stderr-json", ...NO_BEHAVIORS,
  ], { timeoutMs: 400_000 });
  otherRequestsAfterCrawl = [...site.requests.other];
  summary = JSON.parse(readFileSync(join(collectionDir(), "qa.json"), "utf8")) as QaSummary;
  results = new Map(summary.results.map((r) => [r.url, JSON.parse(readFileSync(join(collectionDir(), "qa", `${r.file}.json`), "utf8")) as QaPageResult]));
}, 420_000);

afterAll(async () => {
  await site?.close();
  await redis?.stop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

/** The value the live crawl used in random.html's content URL (the one the fixture server answered). */
function liveContentPath(): string {
  const live = site.requests.main.filter((r) => /^GET \/qa\/content\/[a-z0-9]+\.json$/.test(r));
  expect(live).toHaveLength(1);
  return live[0].slice("GET ".length);
}

describe("crawl --qa", () => {
  it("keeps the crawl's exit code (0) with pages below the threshold, and lists them worst first in the final log", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    const lines = logLines(crawl.stderr);
    const last = lines[lines.length - 1];
    expect(last.context).toBe("qa");
    expect(last.message).toBe("2 of 5 pages replay below the QA threshold 0.9");
    expect((last.details.pages as { url: string }[]).map((p) => p.url)).toEqual([pageUrl("random"), pageUrl("offsite")]);
  });

  it("checks every page of the crawl, and writes qa.json, qa/<page>.json and the images under safe names", () => {
    expect(summary.pages).toBe(5);
    expect([...results.keys()].sort()).toEqual(["index", "offsite", "query", "random", "whole"].map(pageUrl).sort());
    expect(summary.below.map((b) => b.url)).toEqual([pageUrl("random"), pageUrl("offsite")]);
    const files = readdirSync(join(collectionDir(), "qa")).sort();
    const expected = [...results.values()].flatMap((r) => [`${r.file}.json`, `${r.file}.live.png`, `${r.file}.replay.png`]);
    expect(files).toEqual([...expected, "index.html"].sort());
    for (const file of files) expect(file).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it("random.html: its content is missing in replay, named exactly; text and screenshot score low", () => {
    const random = results.get(pageUrl("random"))!;
    const livePath = liveContentPath();
    expect(random.replayed).toBe(true);
    expect(random.missing).toHaveLength(1);
    expect(random.missing[0]).toMatch(new RegExp(`^${site.url.replace(/\./g, "\\.")}/qa/content/[a-z0-9]+\\.json$`));
    // Replay asked for another random URL than the crawl's (and never got it from the live site).
    expect(random.missing[0]).not.toBe(site.url + livePath);
    expect(site.requests.main.filter((r) => r === `GET ${new URL(random.missing[0]).pathname}`)).toEqual([]);
    expect(random.resourceCounts).toEqual({ crawlGood: 3, crawlBad: 0, replayGood: 2, replayBad: 1 });
    expect(random.scores.resources).toBeCloseTo(2 / 3, 10);
    expect(random.scores.text!).toBeLessThan(0.2);
    expect(random.scores.screenshot!).toBeLessThan(0.7);
    expect(random.scores.overall).toBe(Math.min(random.scores.text!, random.scores.screenshot!));
  });

  it("offsite.html: the other host's image is the one missing resource; no request reached that host", () => {
    const offsite = results.get(pageUrl("offsite"))!;
    expect(offsite.replayed).toBe(true);
    expect(offsite.missing).toEqual([`${site.otherUrl}/banner.png`]);
    expect(offsite.resourceCounts).toEqual({ crawlGood: 2, crawlBad: 0, replayGood: 2, replayBad: 1 });
    expect(offsite.scores.resources).toBeCloseTo(2 / 3, 10);
    expect(offsite.scores.overall).toBeCloseTo(2 / 3, 10);
    expect(offsite.scores.text).toBe(1);
    // Blocked live, and the replay never went to the live host either.
    expect(otherRequestsAfterCrawl).toEqual([]);
  });

  it("the whole pages score high: every request answered, the same text, the same pixels", () => {
    for (const name of WHOLE) {
      const page = results.get(pageUrl(name))!;
      expect(page.missing, name).toEqual([]);
      expect(page.scores.resources, name).toBe(1);
      expect(page.scores.text, name).toBe(1);
      expect(page.scores.screenshot!, name).toBeGreaterThanOrEqual(0.99);
      expect(page.scores.overall, name).toBeGreaterThanOrEqual(0.99);
      expect(page.resourceCounts.replayBad, name).toBe(0);
    }
    // query.html's text came from content.json?r=<random>: the replay showed it.
    expect(results.get(pageUrl("query"))!.scores.text).toBe(1);
    expect(RANDOM_CONTENT.length).toBeGreaterThan(500);
  });

  it("the crawl wrote a urn:pageinfo: record per page: what it requested, with the answers", () => {
    const archive = join(collectionDir(), "archive");
    const records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
    const infos = records.filter((r) => r.headers.get("warc-target-uri")?.startsWith("urn:pageinfo:"));
    expect(infos.map((r) => r.headers.get("warc-target-uri")).sort()).toEqual(["index", "offsite", "query", "random", "whole"].map((n) => `urn:pageinfo:${pageUrl(n)}`).sort());
    const random = infos.find((r) => r.headers.get("warc-target-uri") === `urn:pageinfo:${pageUrl("random")}`)!;
    expect(random.headers.get("content-type")).toBe("application/json");
    const info = JSON.parse(random.payload.toString("utf8")) as { url: string; urls: Record<string, { status: number; mime: string; type: string }> };
    expect(info.url).toBe(pageUrl("random"));
    expect(info.urls).toEqual({
      [pageUrl("random")]: { status: 200, mime: "text/html", type: "Document" },
      [`${site.url}/qa/style.css`]: { status: 200, mime: "text/css", type: "Stylesheet" },
      // The capture names a fetch() request by its Fetch-domain resource type, XHR.
      [site.url + liveContentPath()]: { status: 200, mime: "application/json", type: "XHR" },
    });
  });
});

describe("qa/index.html in Chromium", () => {
  it("one row per page, worst first, with scores, missing resources and both thumbnails loaded", async () => {
    const browser = await puppeteer.launch({ executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"] });
    try {
      const tab = await browser.newPage();
      await tab.setViewport({ width: 1400, height: 4000 });
      await tab.goto(pathToFileURL(join(collectionDir(), "qa", "index.html")).href, { waitUntil: "load" });
      await tab.waitForFunction(() => Array.from(document.images).every((img) => img.complete), { timeout: 30_000 });
      const rows = await tab.$$eval("tbody tr", (trs) => trs.map((tr) => ({
        url: tr.getAttribute("data-url"),
        below: tr.classList.contains("below"),
        overall: tr.querySelector("td.overall")!.textContent,
        resources: tr.querySelector("td.resources")!.textContent,
        missing: Array.from(tr.querySelectorAll("ul.missing li"), (li) => li.textContent),
        images: Array.from(tr.querySelectorAll("td.thumbs img"), (img) => ({ cls: img.className, width: (img as HTMLImageElement).naturalWidth, height: (img as HTMLImageElement).naturalHeight, shown: [img.clientWidth, img.clientHeight] })),
      })));
      expect(rows.map((r) => r.url)).toEqual(summary.results.map((r) => r.url));
      expect(rows.slice(0, 2).map((r) => r.url)).toEqual([pageUrl("random"), pageUrl("offsite")]);
      expect(rows.map((r) => r.below)).toEqual([true, true, false, false, false]);
      expect(rows[1]).toMatchObject({ overall: "66.7%", resources: "66.7%", missing: [`${site.otherUrl}/banner.png`] });
      expect(rows[0].missing).toEqual(results.get(pageUrl("random"))!.missing);
      for (const row of rows.slice(2)) expect(row.missing).toEqual([]);
      for (const row of rows) expect(row.images).toEqual([{ cls: "live", width: 1366, height: 900, shown: [240, 158] }, { cls: "replay", width: 1366, height: 900, shown: [240, 158] }]);
      expect(await tab.$eval(".below-count", (el) => el.textContent)).toBe("2");
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe("qa --qaSource", () => {
  it("a multi-WACZ JSON by URL, --pages 2: the first two pages listed, checked from the downloaded archive", async () => {
    const wacz = join(collectionDir(), "qa1.wacz");
    const served = mkdtempSync(join(tmpdir(), "qa-served-"));
    writeFileSync(join(served, "set.json"), JSON.stringify({ profile: "multi-wacz-package", resources: [{ name: "qa1.wacz", path: "files/qa1.wacz" }] }));
    const server = http.createServer((req, res) => {
      if (req.url === "/set.json") return res.writeHead(200, { "Content-Type": "application/json" }).end(readFileSync(join(served, "set.json")));
      if (req.url === "/files/qa1.wacz") {
        res.writeHead(200, { "Content-Type": "application/wacz", "Content-Length": statSync(wacz).size });
        return void createReadStream(wacz).pipe(res);
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", () => done()));
    try {
      const source = `http://127.0.0.1:${(server.address() as AddressInfo).port}/set.json`;
      const run = await runCli("qa", ["--qaSource", source, "--pages", "2", "--cwd", cwd, "--collection", "qa2"], { timeoutMs: 200_000 });
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      const standalone = JSON.parse(readFileSync(join(cwd, "collections", "qa2", "qa.json"), "utf8")) as QaSummary;
      // pages.jsonl lists the seed, extraPages.jsonl the rest in crawl order: index.html, then whole.html (the first link).
      expect(standalone.source).toBe(source);
      expect(standalone.results.map((r) => r.url).sort()).toEqual([pageUrl("index"), pageUrl("whole")]);
      for (const r of standalone.results) expect(r.scores.overall, r.url).toBeGreaterThanOrEqual(0.99);
      expect(run.stdout).toContain(`qa: 2 pages in `);
      expect(existsSync(join(cwd, "collections", "qa2", "qa", "index.html"))).toBe(true);
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
      rmSync(served, { recursive: true, force: true });
    }
  }, 220_000);

  it("a source that is not there, or not an archive, is one line and bad usage (exit 4)", async () => {
    const missing = await runCli("qa", ["--qaSource", join(cwd, "nothing.txt"), "--cwd", cwd]);
    expect([missing.code, missing.stderr]).toEqual([4, `qa: ${join(cwd, "nothing.txt")}: no such file or folder\n`]);
    writeFileSync(join(cwd, "notes.txt"), "not an archive");
    const text = await runCli("qa", ["--qaSource", join(cwd, "notes.txt"), "--cwd", cwd]);
    expect(text.code).toBe(4);
    expect(text.stderr).toMatch(/^qa: .*notes\.txt: not a readable WACZ \(.*not a zip file.*\)\n$/);
  });
});
