/**
 * Real pages nobody here wrote: each archive's first HTML page, served back from the archive by
 * fixtures/archivedWeb (a forward proxy on loopback) and crawled alone through it (--scopeType page, one
 * worker, behaviors on as by default). Prints one JSON line per page, then one of totals:
 *   node dist/bench/realWeb.js [--dir ../shared/real-web] [--archives single-pages,js-heavy-homepages]
 * --archives: folders of --dir (every archive in them) or archive files, relative to --dir, comma-separated.
 * Per page: exit code, pages failed, seconds, the requests the proxy got during the crawl (and how many of
 * them asked for a URL the archive does not hold: Chromium's own update and account checks among them),
 * URLs asked for more than once (and how many of those the archive holds), the URLs the crawl stored (and how
 * many of those the archive holds: the crawl stores 404s too), the archive's URL count, and why a page failed
 * (the crawler's "page failed" log lines).
 */
import { spawn } from "node:child_process";
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { WARCParser } from "warcio";
import { startArchivedWeb } from "../fixtures/archivedWeb/index.js";

const { values } = parseArgs({
  options: {
    // ../shared/real-web beside the checkout (the bench runs from dist/bench/).
    dir: { type: "string", default: fileURLToPath(new URL("../../../shared/real-web", import.meta.url)) },
    archives: { type: "string", default: "single-pages,js-heavy-homepages" },
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
async function storedUrls(collectionDir: string): Promise<Set<string>> {
  const urls = new Set<string>();
  const archive = join(collectionDir, "archive");
  if (!existsSync(archive)) return urls;
  for (const file of readdirSync(archive)) {
    for await (const record of new WARCParser(createReadStream(join(archive, file)))) {
      if ((record.warcType === "response" || record.warcType === "revisit") && record.warcTargetURI) urls.add(record.warcTargetURI);
    }
  }
  return urls;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

interface PageFigures {
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
  /** Of the URLs captured, those the archive holds (the crawl stores 404s too). */
  urlsCapturedInArchive: number;
  archiveUrls: number;
  failures?: string[];
}

const pages: PageFigures[] = [];
for (const file of archiveFiles()) {
  const web = await startArchivedWeb([file]);
  const page = web.urls()[0];
  const cwd = mkdtempSync(join(tmpdir(), "bench-realweb-"));
  try {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [CRAWL, "--url", page, "--scopeType", "page", "--workers", "1", "--collection", "bench",
      "--cwd", cwd, "--statsFilename", join(cwd, "stats.json"), ...web.crawlFlags],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...web.crawlEnv } });
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
    const failures = stderr.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as { message: string; logLevel: string; details?: { error?: string } })
      .filter((line) => /^page failed/.test(line.message) || line.logLevel === "error" || line.logLevel === "fatal")
      .map((line) => `${line.message}${line.details?.error ? `: ${line.details.error}` : ""}`);
    const figures: PageFigures = {
      archive: file.slice(values.dir.length + 1),
      page,
      exit,
      failed,
      seconds: round(seconds),
      requests: web.requests.length,
      notInArchive: web.requests.filter((r) => !web.lookup(r.url)).length,
      repeatedUrls: repeated.length,
      repeatedRequests: repeated.reduce((sum, n) => sum + n - 1, 0),
      repeatedArchivedUrls: repeatedArchived.length,
      urlsCaptured: captured.size,
      urlsCapturedInArchive: [...captured].filter((url) => web.lookup(url)).length,
      archiveUrls: web.archivedUrls().length,
      ...(failures.length ? { failures: [...new Set(failures)] } : {}),
    };
    pages.push(figures);
    console.log(JSON.stringify({ benchmark: "realWeb", ...figures }));
  } finally {
    await web.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}

const sum = (pick: (p: PageFigures) => number): number => round(pages.reduce((total, p) => total + pick(p), 0));
console.log(JSON.stringify({
  benchmark: "realWeb",
  totals: {
    pages: pages.length,
    exitedNonZero: pages.filter((p) => p.exit !== 0).map((p) => p.archive),
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
