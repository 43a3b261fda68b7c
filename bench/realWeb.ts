/**
 * Real pages nobody here wrote: each archive's first HTML page, served back from the archive by
 * fixtures/archivedWeb (a forward proxy on loopback) and crawled through it (--scopeType page, one worker,
 * behaviors on as by default), each page alone, or with --together all of them as the seeds of one crawl.
 *   node dist/bench/realWeb.js [--dir ../shared/real-web] [--archives single-pages,js-heavy-homepages]
 *     [--together [--floor]] [--crawlers ../base/dist/src/cli/crawl.js,dist/src/cli/crawl.js] [--rounds 3] [--keep DIR]
 * --archives: folders of --dir (every archive in them) or archive files, relative to --dir, comma-separated.
 * --crawlers: builds to compare (default this one), alternated within each round. --keep: each crawl's folder
 * is kept there (<build index>-<round>-<archive>), to compare what the builds captured. --floor (with --together): in each round,
 * a plain Chromium also loads the same pages through the same proxy, one tab, to their load event (no capture,
 * no behaviors): what no crawler that loads them in a browser can go below.
 * Prints one JSON line per crawl, then per build one of totals per round. Per crawl: exit code, pages failed,
 * seconds, the requests the proxy got during the crawl (and how many of them asked for a URL the archive does
 * not hold: Chromium's own update and account checks among them), URLs asked for more than once (and how many
 * of those the archive holds), the URLs the crawl stored (and how many of those the archive holds: the crawl
 * stores 404s too), the archive's URL count, and why a page failed (the crawler's "page failed" log lines).
 */
import { spawn } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import puppeteer from "puppeteer-core";
import { WARCParser } from "warcio";
import { startArchivedWeb, type ArchivedWeb } from "../fixtures/archivedWeb/index.js";

const { values } = parseArgs({
  options: {
    // ../shared/real-web beside the checkout (the bench runs from dist/bench/).
    dir: { type: "string", default: fileURLToPath(new URL("../../../shared/real-web", import.meta.url)) },
    archives: { type: "string", default: "single-pages,js-heavy-homepages" },
    // Every page a seed of one crawl (one browser launch, one WACZ), as a user crawls a list of pages.
    together: { type: "boolean", default: false },
    // Built crawlers to compare (paths of dist/src/cli/crawl.js), alternated in each round; default: this build.
    crawlers: { type: "string" },
    rounds: { type: "string", default: "1" },
    // Keep each crawl's collection under this folder (<build>-<round>-<archive>), to compare what builds captured.
    keep: { type: "string" },
    // Also time a plain Chromium loading the same pages (no capture, no behaviors) in each round: the floor.
    floor: { type: "boolean", default: false },
  },
});
const CRAWL = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));

function archiveFiles(): string[] {
  return values.archives.split(",").flatMap((entry) => {
    const path = join(values.dir, entry);
    if (!statSync(path).isDirectory()) return [path];
    return readdirSync(path).filter((f) => /\.(warc|warc\.gz|wacz)$/.test(f)).sort().map((f) => join(path, f));
  });
}

/** Every response and revisit target URI the crawl's WARC files hold, once each. */
/** The URLs of the crawl's response and revisit records, each with the HTTP status stored for it. */
async function storedUrls(collectionDir: string): Promise<Map<string, number>> {
  const urls = new Map<string, number>();
  const archive = join(collectionDir, "archive");
  if (!existsSync(archive)) return urls;
  for (const file of readdirSync(archive)) {
    for await (const record of new WARCParser(createReadStream(join(archive, file)))) {
      if ((record.warcType === "response" || record.warcType === "revisit") && record.warcTargetURI) urls.set(record.warcTargetURI, Number(record.httpHeaders?.statusCode ?? 0));
    }
  }
  return urls;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

interface LogLine {
  message: string;
  logLevel: string;
  details?: { error?: string } & Record<string, unknown>;
}

interface PageFigures {
  build: string;
  archive: string;
  page: string;
  exit: number;
  failed: number;
  seconds: number;
  requests: number;
  notInArchive: number;
  repeatedUrls: number;
  repeatedRequests: number;
  /** Of the repeated URLs, those the archive holds (the others are 404s, which nothing caches). */
  repeatedArchivedUrls: number;
  urlsCaptured: number;
  /** Of the URLs captured, those the archive holds, stored with the archived status (the crawl stores 404s too). */
  urlsCapturedInArchive: number;
  archiveUrls: number;
  failures?: string[];
  /** The crawl's three slowest pages, with their phases (the "page timings" debug line). */
  slowestPages: { url: string; ms: Record<string, number> }[];
  /** Drains and idle waits that ran long, with what they waited for. */
  stalls?: Record<string, unknown>[];
}

/**
 * Builds from before the crawler left host names to its proxy check each URL's address themselves: every
 * archived host is mapped to loopback for them (a test seam), as the proxy answers for all of them.
 */
function olderBuildEnv(web: ArchivedWeb): Record<string, string> {
  const hosts = new Set(web.archivedUrls().map((url) => new URL(url).hostname));
  return { CRAWLER_TEST_HOSTS: [...hosts].map((host) => `${host}=127.0.0.1`).join(",") };
}

/** One crawl of `seeds` through `web` by the crawler at `crawler` (a built dist/src/cli/crawl.js). */
async function crawlThrough(crawler: string, web: ArchivedWeb, seeds: string[], archive: string, keepAs: string): Promise<PageFigures> {
  const cwd = mkdtempSync(join(tmpdir(), "bench-realweb-"));
  web.requests.length = 0;
  try {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [crawler, ...seeds.flatMap((seed) => ["--url", seed]), "--scopeType", "page", "--workers", "1",
      "--collection", "bench", "--cwd", cwd, "--statsFilename", join(cwd, "stats.json"), "--logLevel", "debug", "--context", "page,crawl,capture", ...web.crawlFlags],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...web.crawlEnv, ...(crawler === CRAWL ? {} : olderBuildEnv(web)) } });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = await new Promise<number>((done) => child.on("exit", (code) => done(code ?? -1)));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;

    const counts = new Map<string, number>();
    for (const request of web.requests) counts.set(request.url, (counts.get(request.url) ?? 0) + 1);
    const repeated = [...counts.values()].filter((n) => n > 1);
    const repeatedArchived = [...counts].filter(([url, n]) => n > 1 && web.lookup(url));
    const captured = await storedUrls(join(cwd, "collections", "bench"));
    let failed = -1;
    try {
      failed = (JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8")) as { failed: number }).failed;
    } catch {
      // no stats: the exit code says why
    }
    const lines = stderr.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as LogLine);
    const slowestPages = lines.filter((line) => line.message === "page timings")
      .map((line) => ({ url: String(line.details?.url), ms: line.details?.ms as Record<string, number> }))
      .sort((a, b) => b.ms.total - a.ms.total).slice(0, 3);
    // What held a page up: a drain or an idle wait that ran long, requests that never left the browser, and what
    // each waited for (capture's debug lines).
    const stalls = lines.filter((line) => /^the page's drain .* was slow$|^network not quiet when the idle wait ran out$|^requests sent on never left the browser/.test(line.message))
      .map((line) => ({ message: line.message, ...line.details }));
    const failures = lines
      .filter((line) => /^page failed/.test(line.message) || line.logLevel === "error" || line.logLevel === "fatal")
      .map((line) => `${line.message}${line.details?.error ? `: ${line.details.error}` : ""}`);
    return {
      build: crawler,
      archive,
      page: seeds.length === 1 ? seeds[0] : `${seeds.length} pages`,
      exit,
      failed,
      seconds: round(seconds),
      requests: web.requests.length,
      notInArchive: web.requests.filter((r) => !web.lookup(r.url)).length,
      repeatedUrls: repeated.length,
      repeatedRequests: repeated.reduce((sum, n) => sum + n - 1, 0),
      repeatedArchivedUrls: repeatedArchived.length,
      urlsCaptured: captured.size,
      // Stored with the archived answer's status: a redirect the browser made up (HTTPS Upgrades, HSTS) stored
      // as if the server had sent it is not the archived page.
      urlsCapturedInArchive: [...captured].filter(([url, status]) => web.lookup(url)?.status === status).length,
      archiveUrls: web.archivedUrls().length,
      ...(failures.length ? { failures: [...new Set(failures)] } : {}),
      slowestPages,
      ...(stalls.length ? { stalls } : {}),
    };
  } finally {
    if (values.keep) {
      mkdirSync(values.keep, { recursive: true });
      renameSync(cwd, join(values.keep, keepAs.replace(/[^\w.-]+/g, "_")));
    } else {
      rmSync(cwd, { recursive: true, force: true });
    }
  }
}

/** A plain Chromium loading `seeds` one after the other in one tab, to each one's load event, through `web`. */
async function plainLoads(web: ArchivedWeb, seeds: string[]): Promise<{ seconds: number; loadSeconds: number; failed: number }> {
  const started = process.hrtime.bigint();
  const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", `--proxy-server=${web.proxyUrl}`, ...web.chromeArgs], defaultViewport: { width: 1366, height: 900 } });
  let loadMs = 0;
  let failed = 0;
  try {
    const tab = await browser.newPage();
    for (const seed of seeds) {
      const loading = Date.now();
      await tab.goto(seed, { waitUntil: "load", timeout: 60_000 }).catch(() => (failed += 1));
      loadMs += Date.now() - loading;
    }
  } finally {
    await browser.close();
  }
  return { seconds: round(Number(process.hrtime.bigint() - started) / 1e9), loadSeconds: round(loadMs / 1000), failed };
}

const crawlers = values.crawlers ? values.crawlers.split(",").map((path) => resolve(path)) : [CRAWL];
const files = archiveFiles();
const pages: PageFigures[] = [];
for (let turn = 0; turn < Number(values.rounds); turn++) {
  // Builds alternate within a round, so that a busy spell of the machine falls on both.
  for (const crawler of turn % 2 ? [...crawlers].reverse() : crawlers) {
    if (values.together) {
      const seeds: string[] = [];
      for (const file of files) {
        const one = await startArchivedWeb([file]);
        seeds.push(one.urls()[0]);
        await one.close();
      }
      const web = await startArchivedWeb(files);
      try {
        const figures = await crawlThrough(crawler, web, seeds, values.archives, `${crawlers.indexOf(crawler)}-${turn}-together`);
        pages.push(figures);
        console.log(JSON.stringify({ benchmark: "realWeb", round: turn, ...figures }));
        // The floor, once a round, after the last build's crawl.
        if (values.floor && crawler === (turn % 2 ? crawlers[0] : crawlers[crawlers.length - 1])) {
          console.log(JSON.stringify({ benchmark: "realWeb", round: turn, build: "plain Chromium (no capture, no behaviors)", page: `${seeds.length} pages`, ...(await plainLoads(web, seeds)) }));
        }
      } finally {
        await web.close();
      }
      continue;
    }
    for (const file of files) {
      const web = await startArchivedWeb([file]);
      try {
        const figures = await crawlThrough(crawler, web, [web.urls()[0]], file.slice(values.dir.length + 1), `${crawlers.indexOf(crawler)}-${turn}-${file.slice(values.dir.length + 1)}`);
        pages.push(figures);
        console.log(JSON.stringify({ benchmark: "realWeb", round: turn, ...figures }));
      } finally {
        await web.close();
      }
    }
  }
}

for (const crawler of crawlers) {
  const built = pages.filter((p) => p.build === crawler);
  const sum = (pick: (p: PageFigures) => number): number => round(built.reduce((total, p) => total + pick(p), 0) / Number(values.rounds));
  console.log(JSON.stringify({
    benchmark: "realWeb",
    build: crawler,
    rounds: Number(values.rounds),
    perRound: {
      crawls: built.length / Number(values.rounds),
      exitedNonZero: built.filter((p) => p.exit !== 0).map((p) => p.archive),
      pagesFailed: sum((p) => Math.max(p.failed, 0)),
      seconds: sum((p) => p.seconds),
      requests: sum((p) => p.requests),
      notInArchive: sum((p) => p.notInArchive),
      repeatedUrls: sum((p) => p.repeatedUrls),
      repeatedRequests: sum((p) => p.repeatedRequests),
      repeatedArchivedUrls: sum((p) => p.repeatedArchivedUrls),
      urlsCaptured: sum((p) => p.urlsCaptured),
      urlsCapturedInArchive: sum((p) => p.urlsCapturedInArchive),
      archiveUrls: sum((p) => p.archiveUrls),
    },
  }));
}
