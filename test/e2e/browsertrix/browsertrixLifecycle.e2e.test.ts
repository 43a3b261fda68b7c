import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../src/redis/freePort.js";
import { NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite, type PageFault } from "../../helpers/faultySite.js";
import { pacingLog } from "../../helpers/hostile/pacing.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { closedPort } from "../../helpers/closedPort.js";

// browsertrix-crawler's lifecycle flags: how a crawl fails, is restarted, starts over, runs dry, is watched.
// Every test has its own site and collections, and most wait on pages that fail, never answer or are paced:
// they run two at a time (describe.concurrent; maxConcurrency in vitest.config.ts).

let cwd: string;
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-btx-lifecycle-"));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

const COMMON = ["--netIdleWait", "1", "--workers", "1", "--pageLoadTimeout", "20", ...NO_BEHAVIORS];

interface Crawl {
  result: CliResult;
  dir: string;
  /** Pages listed (paths), sorted. */
  pages: string[];
  /** WARC-Target-URI paths of the response records, sorted. */
  responses: string[];
  /** Every file under the collection's folder (relative paths). */
  files: string[];
}

function filesUnder(dir: string, prefix = ""): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]));
}

function look(collection: string, result: CliResult): Crawl {
  const dir = join(cwd, "collections", collection);
  const pages = listedPaths(dir);
  const archive = join(dir, "archive");
  const warcs = existsSync(archive) ? readdirSync(archive).filter((f) => /\.warc(\.gz)?$/.test(f)) : [];
  const responses = warcs
    .flatMap((f) => readWarcRecords(join(archive, f)))
    .filter((r) => r.headers.get("warc-type") === "response")
    .map((r) => new URL(r.headers.get("warc-target-uri") ?? "").pathname)
    .sort();
  return { result, dir, pages, responses, files: filesUnder(dir) };
}

async function crawl(collection: string, args: string[]): Promise<Crawl> {
  const result = await runCli("crawl", ["--cwd", cwd, "--collection", collection, ...COMMON, ...args], { timeoutMs: 240_000 });
  return look(collection, result);
}

async function withSite<T>(pages: number, faults: Record<string, PageFault>, body: (site: FaultySite) => Promise<T>): Promise<T> {
  const site = await startFaultySite(pages, faults);
  try {
    return await body(site);
  } finally {
    await site.close();
  }
}

const why = (run: Crawl) => run.result.stderr.slice(-3000);

describe.concurrent("--maxPageLimit", () => {
  // Alone it limits the --dryRun crawl below to 3 pages; 0 caps nothing in the first --overwrite crawl.
  it("caps --pageLimit (the smaller wins)", () =>
    withSite(5, {}, async (site) => {
      const capped = await crawl("max-capped", ["--url", `${site.url}/`, "--pageLimit", "4", "--maxPageLimit", "2"]);
      expect(capped.result.code, why(capped)).toBe(0);
      expect(capped.pages).toHaveLength(2);
      const bad = await runCli("crawl", ["--url", `${site.url}/`, "--maxPageLimit", "lots", "--cwd", cwd]);
      expect(bad.code).toBe(4);
      expect(bad.stderr).toBe('crawl: --maxPageLimit must be a whole number, got "lots"\n');
    }), 300_000);
});

describe.concurrent("--failOnFailedSeed, --failOnInvalidStatus, --failOnContentCheck", () => {
  let site: FaultySite;
  let closed = "";
  beforeAll(async () => {
    site = await startFaultySite(3, { "/page/2": "error-500" });
    closed = `http://127.0.0.1:${await closedPort()}/`;
  });
  afterAll(() => site?.close());

  /**
   * One crawl without any of the flags, for the three tests: a seed that fails, a 500 page, a page failing
   * its content check; the crawl goes on through them.
   */
  let plainCrawl: Promise<Crawl> | undefined;
  const plain = () =>
    (plainCrawl ??= crawl("without-flags", ["--url", `${site.url}/`, "--url", closed, "--url", `${site.url}/hostile/lifecycle/logged-out`, "--maxPageRetries", "0", "--generateWACZ"]));

  it("a seed that fails fails the crawl: exit 1, no WACZ; without the flag the other seeds' crawl goes on", async () => {
    const failing = await crawl("seed-fails", ["--url", `${site.url}/page/1`, "--url", closed, "--scopeType", "page", "--maxPageRetries", "0", "--generateWACZ", "--failOnFailedSeed"]);
    expect(failing.result.code, why(failing)).toBe(1);
    expect(failing.result.stderr).toContain(`crawl: seed ${closed} failed: `);
    expect(failing.result.stderr).toContain("(--failOnFailedSeed)");
    expect(failing.files.filter((f) => f.endsWith(".wacz"))).toEqual([]);
    const going = await plain();
    expect(going.result.code, why(going)).toBe(0);
    expect(going.pages).toEqual(["/", "/hostile/lifecycle/logged-out", "/page/1", "/page/2", "/page/3"]);
    expect(going.files.filter((f) => f.endsWith(".wacz"))).toEqual(["without-flags.wacz"]);
  }, 300_000);

  it("a 4xx/5xx page is a failed page: retried, not listed, counted for --failOnFailedLimit and --failOnFailedSeed", async () => {
    // Without the flag, a 500 page is a crawled page.
    const without = await plain();
    expect(without.result.code, why(without)).toBe(0);
    expect(without.pages.filter((p) => p === "/" || p.startsWith("/page/"))).toEqual(["/", "/page/1", "/page/2", "/page/3"]);

    // The other crawls of this suite fetch /page/2 only here.
    const hitsBefore = site.hits.get("/page/2") ?? 0;
    const stats = join(cwd, "status-invalid.json");
    const invalid = await crawl("status-invalid", ["--url", `${site.url}/`, "--failOnInvalidStatus", "--maxPageRetries", "1", "--statsFilename", stats]);
    expect(invalid.result.code, why(invalid)).toBe(0);
    expect(invalid.pages).toEqual(["/", "/page/1", "/page/3"]);
    expect((site.hits.get("/page/2") ?? 0) - hitsBefore).toBe(2);
    expect(JSON.parse(readFileSync(stats, "utf8"))).toMatchObject({ crawled: 3, failed: 1 });

    const limited = await crawl("status-limit", ["--url", `${site.url}/`, "--failOnInvalidStatus", "--maxPageRetries", "0", "--failOnFailedLimit", "1"]);
    expect(limited.result.code, why(limited)).toBe(12);
    expect(limited.pages).not.toContain("/page/2");

    const seed = await crawl("status-seed", ["--url", `${site.url}/page/2`, "--url", `${site.url}/page/1`, "--scopeType", "page", "--failOnInvalidStatus", "--failOnFailedSeed", "--maxPageRetries", "0"]);
    expect(seed.result.code, why(seed)).toBe(1);
    expect(seed.result.stderr).toContain(`crawl: seed ${site.url}/page/2 failed: invalid status: HTTP 500`);
  }, 400_000);

  it("a page calling window.__bx_contentCheckFailed fails the crawl with exit 9; without the flag it is an ordinary page", async () => {
    const seed = `${site.url}/hostile/lifecycle/logged-out`;
    const failed = await crawl("content-check", ["--url", seed, "--failOnContentCheck", "--generateWACZ"]);
    expect(failed.result.code, why(failed)).toBe(9);
    expect(failed.result.stderr).toContain(`crawl: content check failed on ${seed}: logged out (--failOnContentCheck)`);
    expect(failed.pages).toEqual([]);
    expect(failed.files.filter((f) => f.endsWith(".wacz"))).toEqual([]);

    const without = await plain();
    expect(without.result.code, why(without)).toBe(0);
    expect(without.pages).toContain("/hostile/lifecycle/logged-out");

    // --restartsOnError: a crawl failing for good exits 0 (browsertrix-crawler: no pointless restart).
    const restarted = await crawl("content-restarts", ["--url", seed, "--failOnContentCheck", "--restartsOnError"]);
    expect(restarted.result.code, why(restarted)).toBe(0);
    expect(restarted.result.stderr).toContain("content check failed");
  }, 300_000);
});

describe.concurrent("--restartsOnError, and --overwrite while a crawl runs on the collection", () => {
  it("a signal leaves packaging to the restart: no WACZ, state kept; the rerun resumes and packages every page. --overwrite meanwhile refuses: the running crawl's redis-server holds the folder; nothing of it is deleted", () => {
    const faults: Record<string, PageFault> = { "/page/3": "silent" };
    return withSite(3, faults, async (site) => {
      const args = ["dist/src/cli/crawl.js", "--url", `${site.url}/`, "--cwd", cwd, "--collection", "restarts", ...COMMON, "--pageLoadTimeout", "5", "--generateWACZ", "--restartsOnError"];
      const child = spawn(process.execPath, args, { cwd: join(import.meta.dirname, "../../..") });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
      // The signal comes while the page that never answers is loading (up to three tries of 5 s): the pages
      // before it are crawled. Before it, a second crawl on the collection with --overwrite is refused.
      try {
        for (let i = 0; i < 600 && !site.hits.get("/page/3"); i++) await new Promise((r) => setTimeout(r, 100));
        const seedHits = site.hits.get("/") ?? 0;
        const second = await runCli("crawl", ["--url", `${site.url}/`, "--cwd", cwd, "--collection", "restarts", "--overwrite", ...COMMON]);
        expect(second.code).toBe(1);
        expect(second.stderr).toContain(`--overwrite: a crawl is running on ${join(cwd, "collections", "restarts")}`);
        expect(existsSync(join(cwd, "collections", "restarts", "redis"))).toBe(true);
        // Refused before it fetched anything.
        expect(site.hits.get("/") ?? 0).toBe(seedHits);
      } finally {
        child.kill("SIGINT");
      }
      // Interrupted (11), its page handed back: the crawl was never disturbed by the refusal.
      expect(await exited, stderr.slice(-3000)).toBe(11);
      const first = look("restarts", { code: 11, signal: null, stdout: "", stderr });
      expect(first.files.filter((f) => f.endsWith(".wacz"))).toEqual([]);
      expect(first.pages).toEqual(["/", "/page/1", "/page/2"]);
      expect(first.files.some((f) => /^archive\/.*\.warc\.gz$/.test(f))).toBe(true);
      expect(first.files.some((f) => f.startsWith("redis/"))).toBe(true);
      expect(stderr).toContain("interrupted with --restartsOnError: not packaged");

      delete faults["/page/3"];
      const rerun = await runCli("crawl", args.slice(1), { timeoutMs: 240_000 });
      expect(rerun.code, rerun.stderr.slice(-3000)).toBe(0);
      const wacz = await readZip(join(cwd, "collections", "restarts", "restarts.wacz"));
      const listed = (wacz.get("pages/pages.jsonl")?.data.toString() ?? "") + (wacz.get("pages/extraPages.jsonl")?.data.toString() ?? "");
      const paths = listed.trim().split("\n").filter((l) => l.includes('"url"')).map((l) => new URL((JSON.parse(l) as { url: string }).url).pathname).sort();
      expect(paths).toEqual(["/", "/page/1", "/page/2", "/page/3"]);
    });
  }, 300_000);
});

describe.concurrent("--overwrite", () => {
  it("deletes the collection's folder first: only the new crawl's records and pages remain", () =>
    withSite(2, {}, async (site) => {
      // --maxPageLimit 0 caps nothing: --pageLimit alone stops the crawl at 2 pages.
      const first = await crawl("overwritten", ["--url", `${site.url}/`, "--pageLimit", "2", "--maxPageLimit", "0"]);
      expect(first.result.code, why(first)).toBe(0);
      expect(first.pages).toHaveLength(2);
      expect(first.responses).toContain("/page/1");
      writeFileSync(join(first.dir, "left-over.txt"), "from before");

      const again = await crawl("overwritten", ["--url", `${site.url}/page/2`, "--scopeType", "page", "--overwrite"]);
      expect(again.result.code, why(again)).toBe(0);
      expect(again.pages).toEqual(["/page/2"]);
      expect(again.responses).toContain("/page/2");
      expect(again.responses).not.toContain("/page/1");
      expect(again.files).not.toContain("left-over.txt");

      // Never a folder that is not a collection's.
      mkdirSync(join(cwd, "collections"), { recursive: true });
      const dots = await runCli("crawl", ["--url", `${site.url}/`, "--cwd", cwd, "--collection", "..", "--overwrite"]);
      expect(dots.code).toBe(4);
      expect(dots.stderr.trim().split("\n")).toHaveLength(1);
      expect(existsSync(join(cwd, "collections", "overwritten"))).toBe(true);
    }), 300_000);
});

describe.concurrent("--dryRun", () => {
  it("crawls and lists the pages but writes no archive data: no WARC, no WACZ, no text or screenshot records; --maxPageLimit alone limits the crawl", () =>
    withSite(5, {}, async (site) => {
      const run = await crawl("dry", ["--url", `${site.url}/`, "--dryRun", "--generateWACZ", "--text", "to-pages,to-warc", "--screenshot", "view", "--maxPageLimit", "3"]);
      expect(run.result.code, why(run)).toBe(0);
      expect(run.pages).toHaveLength(3);
      expect(run.pages).toEqual(["/", "/page/1", "/page/2"]);
      // The pages past the cap were never fetched.
      expect(site.hits.get("/page/3") ?? 0).toBe(0);
      expect(run.files.filter((f) => /\.(warc|warc\.gz|wacz|cdxj)$/.test(f))).toEqual([]);
      expect(run.files.some((f) => f.startsWith("logs/") && f.endsWith(".log"))).toBe(true);
    }), 300_000);
});

describe.concurrent("--rateLimitInterruptCount", () => {
  it("interrupts the crawl with exit 18 once that many rate-limit answers came", () =>
    withSite(1, {}, async (site) => {
      const run = await crawl("rate-interrupt", ["--url", `${site.url}/hostile/pacing/always-busy`, "--rateLimitInterruptCount", "2", "--rateLimitTimeout", "5", "--rateLimitMaxRetries", "10"]);
      expect(run.result.code, why(run)).toBe(18);
      expect(run.result.stderr).toContain("(--rateLimitInterruptCount 2): interrupting the crawl");
      expect(pacingLog(site.url, "/hostile/pacing/always-busy")).toHaveLength(2);
      expect(run.pages).toEqual([]);
    }), 300_000);
});

function probe(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const req = get({ host: "127.0.0.1", port, path: "/healthz", timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.on("error", () => resolve(null));
    req.on("timeout", () => req.destroy());
  });
}

describe.concurrent("--healthCheckPort", () => {
  it("answers /healthz 200 while pages are crawled, 503 once as many attempts in a row as workers failed", () =>
    withSite(3, { "/page/1": "error-500", "/page/2": "error-500", "/page/3": "error-500" }, async (site) => {
      const port = await freePort();
      const child = spawn(process.execPath, ["dist/src/cli/crawl.js", "--url", `${site.url}/`, "--cwd", cwd, "--collection", "health", ...COMMON,
        "--healthCheckPort", String(port), "--failOnInvalidStatus", "--maxPageRetries", "2"], { cwd: join(import.meta.dirname, "../../..") });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      let running = true;
      const exited = new Promise<number | null>((resolve) => child.on("close", (code) => ((running = false), resolve(code))));
      const seen: number[] = [];
      while (running) {
        const status = await probe(port);
        if (status !== null && seen[seen.length - 1] !== status) seen.push(status);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await exited, stderr.slice(-3000)).toBe(0);
      expect(seen[0]).toBe(200);
      expect(seen).toContain(503);
      // The server is gone with the crawl.
      expect(await probe(port)).toBeNull();
    }), 300_000);

  it("a port in use: one clear line, exit 1, nothing written", async () => {
    const busy = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => busy.listen(port, resolve));
    try {
      const run = await runCli("crawl", ["--url", "http://127.0.0.1:9/", "--cwd", cwd, "--collection", "health-busy", "--healthCheckPort", String(port)]);
      expect(run.code).toBe(1);
      expect(run.stderr.split("\n").filter((l) => l.startsWith("crawl:"))).toEqual([`crawl: --healthCheckPort ${port}: cannot serve the health check: the port is in use`]);
      expect(existsSync(join(cwd, "collections", "health-busy"))).toBe(false);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  }, 60_000);
});
