// --blockRules, --blockMessage, --blockAds, --adBlockMessage (issue 17), on a loopback site: pages embed a
// "video" host's iframe, scripts, images and a frame from hosts on the ad list (real EasyList/EasyPrivacy
// host names, mapped to 127.0.0.3 by CRAWLER_TEST_HOSTS: no name is asked of DNS, no packet leaves
// loopback), and frames whose text a frameTextMatch rule reads. Every server counts what it was asked.
import { createServer, type Server } from "node:http";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crawlInterruptedAfterFirstPage, logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

interface Host {
  server: Server;
  port: number;
  /** Requests received, by path. */
  hits: Map<string, number>;
  total(): number;
}

const SITE = "site.test";
const VIDEO = "video.test";
// On the list: g.doubleclick.net (so its subdomains), scorecardresearch.com; not on it: video.test, site.test.
// (Not google-analytics.com: Chromium's HSTS preload list makes its http:// URLs https:// before they are sent.)
const AD_SCRIPT_HOST = "securepubads.g.doubleclick.net";
const AD_FRAME_HOST = "pagead.g.doubleclick.net";
const AD_PIXEL_HOST = "b.scorecardresearch.com";

/**
 * A site, its video host and its ad host, each counting what it was asked: every test has its own, so that
 * tests run two at a time (marked concurrent) and each counts only its own crawls' requests.
 */
interface World {
  site: Host;
  video: Host;
  ads: Host;
}

let cwd: string;
const worlds: World[] = [];
const env: NodeJS.ProcessEnv = {
  CRAWLER_TEST_HOSTS: [`${SITE}=127.0.0.1`, `${VIDEO}=127.0.0.2`, ...[AD_SCRIPT_HOST, AD_FRAME_HOST, AD_PIXEL_HOST].map((h) => `${h}=127.0.0.3`)].join(","),
};

const html = (body: string) => `<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`;

function pages({ ads, video }: World): Record<string, string> {
  const ad = (host: string, path: string) => `http://${host}:${ads.port}${path}`;
  const adParts = `<script src="${ad(AD_SCRIPT_HOST, "/tag/js/gpt.js")}"></script><img src="${ad(AD_PIXEL_HOST, "/collect.gif")}">`;
  const frames = `<iframe src="http://${VIDEO}:${video.port}/embed/1"></iframe>`
    + `<iframe src="/frame-ok.html"></iframe><iframe src="/frame-bad.html"></iframe>`
    + `<iframe src="${ad(AD_FRAME_HOST, "/ad-frame.html")}"></iframe>`;
  const routes: Record<string, string> = {
    "/": html(`<p>Home</p><img src="/local.png">${adParts}${frames}<a href="/page2">2</a>`),
    "/page2": html(`<p>Two</p>${adParts}<img src="/two.png">`),
    "/frame-ok.html": html(`<p>Allowed channel</p><img src="/frame-ok.png">`),
    "/frame-bad.html": html(`<p>Forbidden channel</p><img src="/frame-bad.png">`),
  };
  for (let i = 3; i <= 6; i++) routes[`/p${i}`] = html(`<p>Page ${i}</p>${adParts}<img src="/img${i}.png">`);
  // Slow pages (1.5 s), so that a crawl can be interrupted between two of them.
  for (let i = 1; i <= 3; i++) routes[`/slow${i}`] = html(`<p>Slow ${i}</p>${adParts}<img src="/slow${i}.png">`);
  return routes;
}

const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");

async function startHost(address: string, routes: () => Record<string, string>): Promise<Host> {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const page = routes()[path];
    if (page && path.startsWith("/slow")) {
      setTimeout(() => res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(page), 1500);
    } else if (page) {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(page);
    } else if (path.endsWith(".png") || path.endsWith(".gif")) {
      res.writeHead(200, { "Content-Type": "image/png" }).end(PNG);
    } else if (path.endsWith(".js")) {
      res.writeHead(200, { "Content-Type": "text/javascript" }).end("window.ad = 1;");
    } else if (path.startsWith("/embed/") || path.endsWith(".html")) {
      res.writeHead(200, { "Content-Type": "text/html" }).end(html(`<p>embedded</p><img src="/thumb.png">`));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return { server, port: (server.address() as AddressInfo).port, hits, total: () => [...hits.values()].reduce((a, b) => a + b, 0) };
}

async function startWorld(): Promise<World> {
  const world = {} as World;
  world.site = await startHost("127.0.0.1", () => pages(world));
  world.video = await startHost("127.0.0.2", () => ({}));
  world.ads = await startHost("127.0.0.3", () => ({}));
  worlds.push(world);
  return world;
}

beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-blocking-"));
});
afterAll(async () => {
  await Promise.all(worlds.flatMap(({ site, video, ads }) => [site, video, ads].map((h) => new Promise((resolve) => h.server.close(resolve)))));
  rmSync(cwd, { recursive: true, force: true });
});

/** The URLs of one world. */
const urls = ({ site, video, ads }: World) => ({
  siteUrl: (path: string) => `http://${SITE}:${site.port}${path}`,
  adUrls: () => [`http://${AD_SCRIPT_HOST}:${ads.port}/tag/js/gpt.js`, `http://${AD_PIXEL_HOST}:${ads.port}/collect.gif`],
  adFrame: () => `http://${AD_FRAME_HOST}:${ads.port}/ad-frame.html`,
  videoFrame: () => `http://${VIDEO}:${video.port}/embed/1`,
});

interface Crawl {
  result: CliResult;
  seconds: number;
  stats: { crawled: number; failed: number; failedAttempts: number; blocked: number; blockedReport?: string; adHosts?: { list: string; version: string; hosts: number } };
  /** Target URIs of the response records, sorted (every host, with its port). */
  archived: string[];
  /** Every record's target URI (requests, responses, anything). */
  anyRecord: string[];
  report: { url: string; by: string; rule: string; page: string | null; resourceType: string }[];
  text: string;
  dir: string;
}

let collections = 0;

async function crawl({ site, video, ads }: World, seeds: string[], flags: string[], name?: string): Promise<Crawl> {
  for (const h of [site, video, ads]) h.hits.clear();
  const collection = name ?? `block-${++collections}`;
  const statsFile = join(cwd, `${collection}-stats.json`);
  const started = Date.now();
  const result = await runCli("crawl", [
    ...seeds.flatMap((s) => ["--url", s]), "--cwd", cwd, "--collection", collection, "--statsFilename", statsFile,
    "--behaviors", "", "--netIdleWait", "2", "--text", "to-pages", ...flags,
  ], { timeoutMs: 180_000, env });
  const seconds = (Date.now() - started) / 1000;
  expect(result.code, result.stderr.slice(-3000)).toBe(0);
  const dir = join(cwd, "collections", collection);
  const records = readdirSync(join(dir, "archive")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
  const anyRecord = records.map((r) => r.headers.get("warc-target-uri") ?? "").filter(Boolean);
  const archived = records.filter((r) => r.headers.get("warc-type") === "response").map((r) => r.headers.get("warc-target-uri") ?? "").sort();
  const reportFile = join(dir, "reports", "blocked.jsonl");
  const report = existsSync(reportFile) ? readFileSync(reportFile, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Crawl["report"][number]) : [];
  const text = ["pages.jsonl", "extraPages.jsonl"].map((f) => join(dir, "pages", f)).filter(existsSync)
    .flatMap((f) => readFileSync(f, "utf8").trim().split("\n").slice(1)).map((l) => (JSON.parse(l) as { text?: string }).text ?? "").join("\n");
  console.log(JSON.stringify({ crawl: collection, seconds }));
  return { result, seconds, stats: JSON.parse(readFileSync(statsFile, "utf8")) as Crawl["stats"], archived, anyRecord, report, text, dir };
}

describe("blocking", () => {
  it.concurrent("without blocking flags, the ad and video hosts are fetched and archived (the fixture is meaningful)", async () => {
    const world = await startWorld();
    const { video, ads } = world;
    const { siteUrl, adUrls, adFrame, videoFrame } = urls(world);
    const c = await crawl(world, [siteUrl("/")], ["--scopeType", "page"]);
    expect(ads.total()).toBeGreaterThanOrEqual(3);
    expect(video.total()).toBeGreaterThanOrEqual(1);
    expect(c.archived).toEqual(expect.arrayContaining([...adUrls(), adFrame(), videoFrame(), siteUrl("/frame-bad.png")]));
    expect(c.stats.blocked).toBe(0);
    expect(c.report).toEqual([]);
  }, 200_000);

  it.concurrent("rules from a --config YAML list, --blockAds, messages: exactly the blocked URLs are missing, reported and counted; the ad server is never asked", async () => {
    const world = await startWorld();
    const { site, video, ads } = world;
    const { siteUrl, adUrls, adFrame, videoFrame } = urls(world);
    const config = join(cwd, "block.yaml");
    writeFileSync(config, [
      "blockRules:",
      "  - url: 'video\\.test.*/embed/'",
      "    inFrameUrl: 'site\\.test'",
      "  - url: '/frame-'",
      "    frameTextMatch: 'Forbidden channel'",
      "blockMessage: '<p>BLOCKED-BY-RULE</p>'",
      "blockAds: true",
      "adBlockMessage: '<p>AD-BLOCKED</p>'",
      "generateWACZ: true",
    ].join("\n") + "\n");
    const c = await crawl(world, [siteUrl("/")], ["--config", config, "--scopeType", "prefix"]);
    // Not one request reached the ad host or the blocked video frame's host.
    expect(ads.total()).toBe(0);
    expect(video.total()).toBe(0);
    // The text rule read the frame from the browser's own request (once); what it holds was never asked for.
    expect(site.hits.get("/frame-bad.html")).toBe(1);
    expect(site.hits.get("/frame-bad.png") ?? 0).toBe(0);
    expect(c.archived).toEqual([siteUrl("/"), siteUrl("/frame-ok.html"), siteUrl("/frame-ok.png"), siteUrl("/local.png"), siteUrl("/page2"), siteUrl("/two.png")].sort());
    // No record of any kind (request, response, metadata) for what was blocked.
    const blocked = [...adUrls(), adFrame(), videoFrame(), siteUrl("/frame-bad.html")];
    for (const url of blocked) expect(c.anyRecord).not.toContain(url);
    expect(c.report.map((r) => r.url).sort()).toEqual([...blocked].sort());
    const byUrl = new Map(c.report.map((r) => [r.url, r]));
    expect(byUrl.get(adUrls()[0])).toMatchObject({ by: "ad host", rule: "g.doubleclick.net", page: siteUrl("/"), resourceType: "Script" });
    expect(byUrl.get(adUrls()[1])).toMatchObject({ by: "ad host", rule: "scorecardresearch.com", resourceType: "Image" });
    expect(byUrl.get(adFrame())).toMatchObject({ by: "ad host", resourceType: "Document" });
    expect(byUrl.get(videoFrame())).toMatchObject({ by: "rule", rule: JSON.stringify({ url: "video\\.test.*/embed/", inFrameUrl: "site\\.test" }), resourceType: "Document" });
    expect(byUrl.get(siteUrl("/frame-bad.html"))).toMatchObject({ by: "rule", resourceType: "Document" });
    // Page 1: two ads, the ad frame, the video frame, the frame blocked by its text; page 2: its two ads.
    expect(c.stats.blocked).toBe(7);
    expect(c.stats).toMatchObject({ crawled: 2, failed: 0, failedAttempts: 0 });
    expect(c.stats.adHosts).toMatchObject({ list: expect.stringContaining("EasyList") as unknown, hosts: expect.any(Number) as unknown });
    expect(c.stats.adHosts!.hosts).toBeGreaterThan(50_000);
    // The messages are shown in the blocked frames (page text, same-process frames included), never archived.
    expect(c.text).toContain("BLOCKED-BY-RULE");
    expect(c.text).toContain("AD-BLOCKED");
    const wacz = await readZip(join(c.dir, `${c.dir.split("/").pop()}.wacz`));
    expect(wacz.get("reports/blocked.jsonl")?.data.toString("utf8").trim().split("\n")).toHaveLength(5);
  }, 200_000);

  it.concurrent("allowOnly (a rule's JSON on the command line): only what matches loads, in every frame", async () => {
    const world = await startWorld();
    const { video, ads } = world;
    const { siteUrl, adUrls, adFrame, videoFrame } = urls(world);
    const rule = JSON.stringify({ url: "site\\.test", type: "allowOnly" });
    const c = await crawl(world, [siteUrl("/")], ["--blockRules", rule, "--scopeType", "page"]);
    expect(ads.total()).toBe(0);
    expect(video.total()).toBe(0);
    expect(c.archived).toEqual([siteUrl("/"), siteUrl("/frame-bad.html"), siteUrl("/frame-bad.png"), siteUrl("/frame-ok.html"), siteUrl("/frame-ok.png"), siteUrl("/local.png")].sort());
    expect(c.report.map((r) => r.url).sort()).toEqual([...adUrls(), adFrame(), videoFrame()].sort());
    expect(c.report.every((r) => r.by === "rule" && r.rule === rule)).toBe(true);
    expect(c.stats).toMatchObject({ crawled: 1, failed: 0, blocked: 4 });
    // Without --blockMessage a blocked frame shows the browser's own error page, not a message.
    expect(c.text).toContain("ERR_BLOCKED_BY_CLIENT");
    expect(c.text).not.toContain("BLOCKED-BY-RULE");
    expect(c.text).not.toContain("AD-BLOCKED");
  }, 200_000);

  it.concurrent("--workers 2: every tab blocks, the count is the crawl's, no page fails", async () => {
    const world = await startWorld();
    const { ads } = world;
    const { siteUrl, adUrls } = urls(world);
    const seeds = ["/page2", "/p3", "/p4", "/p5", "/p6"].map(siteUrl);
    const c = await crawl(world, seeds, ["--workers", "2", "--scopeType", "page", "--blockads", "--blockRules", "/img[35]\\.png"]);
    expect(ads.total()).toBe(0);
    expect(c.stats).toMatchObject({ crawled: 5, failed: 0, failedAttempts: 0, blocked: 12 });
    expect(c.report.map((r) => r.url).sort()).toEqual([...adUrls(), siteUrl("/img3.png"), siteUrl("/img5.png")].sort());
    expect(c.archived).toEqual([...seeds, siteUrl("/two.png"), siteUrl("/img4.png"), siteUrl("/img6.png")].sort());
  }, 200_000);
});

describe("blocking across runs", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it.concurrent("--refresh: the re-crawl blocks as the first crawl did; nothing blocked is archived, nothing fails", async () => {
    const world = await startWorld();
    const { ads } = world;
    const { siteUrl, adUrls } = urls(world);
    const flags = ["--scopeType", "page", "--blockAds", "--redisDedupeUrl", redis.url, "--generateWACZ"];
    const first = await crawl(world, [siteUrl("/page2")], flags, "refresh-1");
    expect(first.stats).toMatchObject({ crawled: 1, failed: 0, blocked: 2 });
    const again = await crawl(world, [siteUrl("/page2")], [...flags, "--refresh"], "refresh-2");
    expect(ads.total()).toBe(0);
    expect(again.stats).toMatchObject({ crawled: 1, failed: 0, failedAttempts: 0, blocked: 2 });
    expect(again.report.map((r) => r.url).sort()).toEqual(adUrls().sort());
    for (const url of adUrls()) expect(again.anyRecord).not.toContain(url);
    const changes = readFileSync(join(again.dir, "reports", "changes.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { url: string });
    expect(changes.map((c) => c.url)).toEqual([siteUrl("/page2")]);
  }, 200_000);

  it.concurrent("an interrupted crawl resumed: the count is the crawl's over both runs, the report keeps the first run's lines", async () => {
    const world = await startWorld();
    const { site, video, ads } = world;
    const { siteUrl, adUrls } = urls(world);
    const collection = "resumed";
    const seeds = ["/slow1", "/slow2", "/slow3"].map(siteUrl);
    const args = [...seeds.flatMap((s) => ["--url", s]), "--cwd", cwd, "--collection", collection, "--statsFilename", join(cwd, "resumed-stats.json"),
      "--behaviors", "", "--netIdleWait", "1", "--scopeType", "page", "--blockAds", "--logging", "stats,debug"];
    for (const h of [site, video, ads]) h.hits.clear();
    // Run 1: interrupted (SIGINT) once its first page is crawled.
    const first = await crawlInterruptedAfterFirstPage(args, env);
    expect(first.code, first.stderr.slice(-2000)).toBe(11);
    const blockedIn = (stderr: string) => logLines(stderr).filter((l) => l.context === "blocking" && l.message === "request blocked").length;
    const firstBlocked = blockedIn(first.stderr);
    const firstCrawled = logLines(first.stderr).filter((l) => l.message === "page crawled").length;
    expect(firstCrawled).toBeGreaterThanOrEqual(1);
    expect(firstCrawled).toBeLessThan(3);
    const reportFile = join(cwd, "collections", collection, "reports", "blocked.jsonl");
    expect(readFileSync(reportFile, "utf8").trim().split("\n")).toHaveLength(2);
    // Run 2: the same command goes on with the rest.
    const second = await runCli("crawl", args, { timeoutMs: 180_000, env });
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    const stats = JSON.parse(readFileSync(join(cwd, "resumed-stats.json"), "utf8")) as Crawl["stats"];
    expect(stats).toMatchObject({ crawled: 3, failed: 0 });
    expect(stats.blocked).toBe(firstBlocked + blockedIn(second.stderr));
    expect(stats.blocked).toBeGreaterThanOrEqual(6);
    expect(ads.total()).toBe(0);
    // Each process run lists a URL once: the resumed run lists the ads again, after the first run's lines.
    const lines = readFileSync(reportFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { url: string });
    expect(lines.map((l) => l.url).sort()).toEqual([...adUrls(), ...adUrls()].sort());
    const archive = join(cwd, "collections", collection, "archive");
    const targets = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f))).map((r) => r.headers.get("warc-target-uri") ?? "");
    for (const url of adUrls()) expect(targets).not.toContain(url);
    for (const url of seeds) expect(targets).toContain(url);
  }, 240_000);

  it.concurrent("two processes of one crawl: each blocks, the count is the crawl's, the archive is the same as one process's", async () => {
    const world = await startWorld();
    const { site, video, ads } = world;
    const { siteUrl, adUrls } = urls(world);
    const collection = "two-processes";
    const seeds = ["/page2", "/p3", "/p4", "/p5", "/p6"].map(siteUrl);
    const statsOf = (n: number) => join(cwd, `two-processes-${n}-stats.json`);
    const args = (n: number) => [...seeds.flatMap((s) => ["--url", s]), "--cwd", cwd, "--collection", collection, "--statsFilename", statsOf(n),
      "--crawlId", "two-processes", "--redisStoreUrl", redis.url, "--behaviors", "", "--netIdleWait", "2", "--scopeType", "page",
      "--blockads", "--blockRules", "/img[35]\\.png"];
    for (const h of [site, video, ads]) h.hits.clear();
    const runs = await Promise.all([1, 2].map((n) => runCli("crawl", args(n), { timeoutMs: 180_000, env })));
    for (const run of runs) expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(ads.total()).toBe(0);
    const crawledBy = runs.map((run) => logLines(run.stderr).filter((l) => l.message === "page crawled").length);
    expect(crawledBy[0]! + crawledBy[1]!).toBe(5);
    // The count is the crawl's (Redis): the process that ended last saw all of it.
    const blocked = [1, 2].map((n) => (JSON.parse(readFileSync(statsOf(n), "utf8")) as Crawl["stats"]).blocked);
    expect(Math.max(...blocked)).toBe(12);
    const dir = join(cwd, "collections", collection);
    const reports = readdirSync(join(dir, "reports")).filter((f) => /^blocked.*\.jsonl$/.test(f));
    const reported = reports.flatMap((f) => readFileSync(join(dir, "reports", f), "utf8").trim().split("\n").filter(Boolean))
      .map((l) => (JSON.parse(l) as { url: string }).url);
    expect(new Set(reported)).toEqual(new Set([...adUrls(), siteUrl("/img3.png"), siteUrl("/img5.png")]));
    const records = readdirSync(join(dir, "archive")).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
    const archived = records.filter((r) => r.headers.get("warc-type") === "response").map((r) => r.headers.get("warc-target-uri") ?? "").sort();
    expect(archived).toEqual([...seeds, siteUrl("/two.png"), siteUrl("/img4.png"), siteUrl("/img6.png")].sort());
  }, 240_000);
});
