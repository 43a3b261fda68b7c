import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../src/redis/freePort.js";
import { NO_BEHAVIORS } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { LIVE, LIVE_SLOW_PAGES } from "../../helpers/hostile/liveView.js";
import { launchReplayBrowser } from "../../helpers/replay.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

// --screencastPort and --screencastRedis: a real headless Chromium watches crawls of slow loopback pages.

let site: FaultySite;
let cwd: string;
let profile: string;
let browser: Browser;
let redis: TestRedis;
let pageUrls: string[];

beforeAll(async () => {
  site = await startFaultySite(0, {});
  cwd = mkdtempSync(join(tmpdir(), "crawl-live-"));
  profile = mkdtempSync(join(tmpdir(), "live-viewer-"));
  browser = await launchReplayBrowser(profile, 60_000);
  redis = await startTestRedis();
  pageUrls = [LIVE.index, ...Array.from({ length: LIVE_SLOW_PAGES }, (_, i) => LIVE.slow(i + 1)), LIVE.failing].map((p) => site.url + p);
});
afterAll(async () => {
  await browser?.close();
  await site?.close();
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  done: Promise<number | null>;
  stderr: () => string;
  started: number;
}

function startCrawl(collection: string, extra: string[], env: NodeJS.ProcessEnv = {}): Running {
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", "--url", site.url + LIVE.index, "--scopeType", "prefix", "--collection", collection, "--cwd", cwd, ...NO_BEHAVIORS,
    "--netIdleWait", "1", "--failOnInvalidStatus", "--maxPageRetries", "0", ...extra,
  ], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, done, stderr: () => stderr, started: Date.now() };
}

/** The live view's address, from the crawl's log line. */
async function liveUrl(running: Running): Promise<string> {
  for (;;) {
    const match = /"watch the crawl at (http:\/\/[^"]+)"/.exec(running.stderr());
    if (match) return match[1];
    if (running.child.exitCode !== null) throw new Error(`the crawl ended without a live view:\n${running.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Path and query of every request and response record's target, sorted (with repeats). */
function archivedTargets(collection: string): string[] {
  const archive = join(cwd, "collections", collection, "archive");
  const records = existsSync(archive) ? readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f))) : [];
  return records
    .filter((r) => ["request", "response"].includes(r.headers.get("warc-type") ?? ""))
    .map((r) => `${r.headers.get("warc-type")} ${(r.headers.get("warc-target-uri") ?? "").replace(site.url, "")}`)
    .sort();
}

/**
 * The workers the live page has shown with a decoded frame of one of the site's pages, gathered while
 * waiting (a worker between pages shows none for a moment: on a busy machine two may never be on
 * screen at the same instant), until `count` distinct ones (worker id and process) have been seen.
 */
function workersWithFrames(page: Page, count: number, timeout: number) {
  type Shown = { id: string | undefined; url: string; label: string; width: number };
  return page.waitForFunction((urls: string[], n: number) => {
    const seen = ((window as unknown as { seenWorkers?: Map<string, Shown> }).seenWorkers ??= new Map<string, Shown>());
    for (const card of Array.from(document.querySelectorAll<HTMLElement>(".worker"))) {
      const img = card.querySelector("img.frame") as HTMLImageElement | null;
      const url = card.dataset.url ?? "";
      const label = card.querySelector(".label")?.textContent ?? "";
      if (img && img.complete && img.naturalWidth > 0 && urls.includes(url)) seen.set(`${card.dataset.workerId} ${label.split(" · ")[1] ?? ""}`, { id: card.dataset.workerId, url, label, width: img.naturalWidth });
    }
    return seen.size >= n ? [...seen.values()] : null;
  }, { timeout, polling: 100 }, pageUrls, count).then(async (handle) => ((await handle.jsonValue()) ?? []) as Shown[]);
}

function get(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on("error", reject).end();
  });
}

describe("--screencastPort", () => {
  it("shows each worker's tab, its page, the progress figures and the warnings live; adds nothing to the archive", async () => {
    const port = await freePort();
    const statsFile = join(cwd, "watched-stats.json");
    const running = startCrawl("watched", ["--workers", "2", "--screencastPort", String(port), "--statsFilename", statsFile]);
    // The same crawl unwatched (no live view), side by side: its pages mostly wait on their late images.
    const plain = startCrawl("unwatched", ["--workers", "2"]);
    const plainDone = plain.done.then((code) => ({ code, ms: Date.now() - plain.started }));
    const url = await liveUrl(running);
    expect(url).toBe(`http://127.0.0.1:${port}/`);
    const viewer = await browser.newPage();
    await viewer.goto(url);

    // A frame of each worker, each on one of the site's pages, within seconds of the start.
    const workers = await workersWithFrames(viewer, 2, 30_000);
    const firstFramesMs = Date.now() - running.started;
    expect(new Set(workers.map((w) => w.id)).size).toBe(2);
    for (const w of workers) {
      expect(pageUrls).toContain(w.url);
      expect(w.width).toBeGreaterThan(0);
    }

    // It serves its page and its stream, nothing else, only on the address it was told.
    expect(await get(`${url}other`)).toBe(404);
    expect(await get(`${url}ws`)).toBe(404);
    expect(await get(`${url}?x=1`)).toBe(200);
    expect(await get(url, { origin: "http://elsewhere.example" })).toBe(403);
    await expect(get(`http://127.0.0.2:${port}/`)).rejects.toThrow(/ECONNREFUSED/);

    // The failing page's warning.
    await viewer.waitForFunction(() => Array.from(document.querySelectorAll<HTMLElement>("#warnings li")).some((li: HTMLElement) => li.dataset.message === "page failed"), { timeout: 60_000 });

    // The figures at the end are the crawl's stats.
    await viewer.waitForFunction(() => document.getElementById("stats")?.dataset.final === "true", { timeout: 120_000 });
    const shown = await viewer.evaluate(() => Object.fromEntries(["crawled", "pending", "queued", "failed", "failedAttempts"].map((id) => [id, Number(document.getElementById(id)?.textContent)])));
    expect(await running.done, running.stderr()).toBe(0);
    const watchedMs = Date.now() - running.started;
    const stats = JSON.parse(readFileSync(statsFile, "utf8")) as { crawled: number; pending: number; queued: number; failed: number; failedAttempts: number };
    expect(shown).toEqual({ crawled: stats.crawled, pending: stats.pending, queued: stats.queued, failed: stats.failed, failedAttempts: stats.failedAttempts });
    expect(stats).toMatchObject({ crawled: LIVE_SLOW_PAGES + 1, failed: 1 });
    await viewer.close();

    // The same crawl unwatched archives the same requests and responses.
    const { code: plainCode, ms: unwatchedMs } = await plainDone;
    expect(plainCode, plain.stderr()).toBe(0);
    expect(archivedTargets("watched")).toEqual(archivedTargets("unwatched"));
    expect(archivedTargets("watched").length).toBeGreaterThan(2 * (LIVE_SLOW_PAGES + 2));
    console.log(JSON.stringify({ liveView: { firstFramesMs, watchedMs, unwatchedMs } }));
  }, 240_000);
});

describe("--screencastPort in use", () => {
  it("is one line and exit 1, before anything is written", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      const run = startCrawl("port-in-use", ["--screencastPort", String(port)]);
      expect(await run.done).toBe(1);
      expect(run.stderr()).toContain(`crawl: --screencastPort ${port}: cannot serve the live view on 127.0.0.1: the port is in use`);
      expect(existsSync(join(cwd, "collections", "port-in-use"))).toBe(false);
    } finally {
      taken.close();
    }
  });
});

describe("--screencastRedis", () => {
  it("the live view of one process shows the workers of both processes of the crawl", async () => {
    const port = await freePort();
    const shared = ["--crawlId", "live-shared", "--redisStoreUrl", redis.url, "--screencastRedis", "--workers", "1"];
    // Both start together: started once the viewer is up, the second could (on a busy machine) join
    // only when the first had crawled every slow page, and then the two are never on screen at once.
    const first = startCrawl("shared", [...shared, "--screencastPort", String(port)]);
    const second = startCrawl("shared", shared);
    const url = await liveUrl(first);
    const viewer = await browser.newPage();
    await viewer.goto(url);
    const workers = await workersWithFrames(viewer, 2, 60_000).catch(async (err: Error) => {
      // Which workers the view showed: tells a view that heard no other process from one that is slow.
      const cards = await viewer.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>(".worker")).map((c) => `${c.dataset.workerId} ${c.dataset.state} ${c.dataset.url}`));
      throw new Error(`${err.message}; the view's workers: ${JSON.stringify(cards)}`);
    });
    const processes = new Set(workers.map((w) => w.label.split(" · ")[1]));
    expect(processes.size, JSON.stringify(workers)).toBe(2);
    expect(processes).toContain(`${(await import("node:os")).hostname()}:${second.child.pid}`);
    expect(await first.done, first.stderr()).toBe(0);
    expect(await second.done, second.stderr()).toBe(0);
    await viewer.close();
  }, 240_000);
});
