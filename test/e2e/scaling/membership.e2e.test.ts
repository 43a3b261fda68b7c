/**
 * Membership and the processes a crawl is made of: crawler processes in different pid namespaces on one
 * crawl (containers on the host network share a host name), the embedded redis-server (dies with its
 * crawler, one per data folder, its death stops the crawl), SIGHUP, and the sitemap reading when its
 * reader dies. Real crawler processes, real redis-server, real Chromium, a real pid namespace (unshare).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, NO_BEHAVIORS } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { startTestRedis } from "../../helpers/redis.js";
import { startSeedSite } from "../../helpers/seedSite.js";
import { readZip } from "../../helpers/zip.js";

const ROOT = join(import.meta.dirname, "../../..");
let cwd: string;
const started: ChildProcess[] = [];

beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-membership-"));
});
afterAll(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(cwd, { recursive: true, force: true });
});

interface Crawler {
  child: ChildProcess;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  log: () => string;
  /** Resolves once a JSON log line with this message was written. */
  logged: (message: string, timeoutMs?: number) => Promise<void>;
}

function startCrawler(args: string[], opts: { env?: Record<string, string>; prefix?: string[] } = {}): Crawler {
  const command = [...(opts.prefix ?? []), process.execPath, "dist/src/cli/crawl.js", "--cwd", cwd, "--netIdleWait", "1", ...NO_BEHAVIORS, ...args];
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, env: { ...process.env, ...opts.env }, stdio: ["ignore", "ignore", "pipe"] });
  started.push(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const logged = async (message: string, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!logLines(stderr.slice(0, stderr.lastIndexOf("\n") + 1)).some((l) => l.message === message)) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the crawler exited before logging "${message}": ${stderr.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`no "${message}" within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { child, exit, log: () => stderr, logged };
}

/** A process that is there and not a zombie (a zombie has exited; only its parent has not reaped it yet). */
function isRunning(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** The embedded redis-server of a collection, from the record its crawler writes beside it. */
async function embeddedRedisPid(collection: string): Promise<number> {
  const file = join(cwd, "collections", collection, "redis", "embedded-redis.json");
  for (let i = 0; i < 200 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50));
  return (JSON.parse(readFileSync(file, "utf8")) as { pid: number }).pid;
}

/** redis-server processes working in a folder (the server changes into its --dir; it retitles its command line). */
function redisServersIn(dir: string): number[] {
  return readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "redis-server" && readlinkSync(`/proc/${pid}/cwd`) === dir && isRunning(Number(pid));
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** The URLs of the pages listed in every WACZ of a collection. */
async function waczPages(collection: string): Promise<string[]> {
  const dir = join(cwd, "collections", collection);
  const urls: string[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".wacz"))) {
    const zip = await readZip(join(dir, name));
    for (const file of ["pages/pages.jsonl", "pages/extraPages.jsonl"]) {
      urls.push(...(zip.get(file)?.data.toString().trim().split("\n").slice(1) ?? []).map((l) => (JSON.parse(l) as { url: string }).url));
    }
  }
  return urls.sort();
}

const lastLine = (text: string) => text.trim().split("\n").pop();

// A real second pid namespace when this runner may make one (root); else the documented test hook.
const unshareWorks = spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "true"]).status === 0;
const inAnotherNamespace = unshareWorks ? { prefix: ["unshare", "--pid", "--fork", "--mount-proc"] } : { env: { CRAWLER_TEST_PID_NAMESPACE: "contained" } };

describe("process identity across pid namespaces", () => {
  let site: FaultySite;
  beforeAll(async () => {
    site = await startFaultySite(12, {});
  });
  afterAll(async () => {
    await site.close();
  });


  it("two crawlers with one host name in two pid namespaces share a crawl: neither takes the other for dead", async () => {
    const redis = await startTestRedis();
    try {
      const shared = ["--url", `${site.url}/`, "--crawlId", "namespaces", "--redisStoreUrl", redis.url, "--generateWACZ", "--workers", "1"];
      const host = startCrawler([...shared, "--collection", "ns-host", "--statsFilename", join(cwd, "ns-host.json")]);
      await host.logged("crawl started");
      const contained = startCrawler([...shared, "--collection", "ns-contained", "--statsFilename", join(cwd, "ns-contained.json")], inAnotherNamespace);
      const [hostExit, containedExit] = await Promise.all([host.exit, contained.exit]);
      expect(hostExit, host.log().slice(-3000)).toEqual({ code: 0, signal: null });
      expect(containedExit, contained.log().slice(-3000)).toEqual({ code: 0, signal: null });

      // Both really ran side by side, each in its own namespace, under one host name.
      const idOf = (log: string) => String(logLines(log).find((l) => l.message === "crawl started")?.details.processId);
      const [hostId, containedId] = [idOf(host.log()), idOf(contained.log())];
      const parts = (id: string) => /^(.*)-(\d+)-(\d+|x)-([0-9a-f]{16}|x)-[0-9a-f]+$/.exec(id)!;
      expect(parts(hostId)[1]).toBe(parts(containedId)[1]);
      expect(parts(hostId)[4]).not.toBe(parts(containedId)[4]);
      for (const log of [host.log(), contained.log()]) {
        expect(log).not.toContain("taking over from crawler processes");
        expect(log).not.toContain("taken for dead");
        expect(logLines(log).filter((l) => l.message === "page crawled").length).toBeGreaterThan(0);
      }
      expect(await redis.client.smembers("namespaces:fenced")).toEqual([]);
      const pages = [...(await waczPages("ns-host")), ...(await waczPages("ns-contained"))].sort();
      expect(pages).toEqual(site.pagePaths.map((p) => `${site.url}${p}`).sort());
      expect(JSON.parse(readFileSync(join(cwd, "ns-host.json"), "utf8")).committed || JSON.parse(readFileSync(join(cwd, "ns-contained.json"), "utf8")).committed).toBe(true);
    } finally {
      await redis.stop();
    }
  }, 240_000);
});

describe("the embedded redis-server", () => {
  let site: FaultySite;
  beforeAll(async () => {
    // /page/3 never answers: a crawl of this site is still running when a test signals it.
    site = await startFaultySite(6, { "/page/3": "silent" });
  });
  afterAll(async () => {
    await site.close();
  });

  it("dies with its crawler when the crawler is SIGKILLed", async () => {
    const crawler = startCrawler(["--url", `${site.url}/`, "--collection", "emb-kill", "--workers", "1"]);
    await crawler.logged("crawl started");
    const redisPid = await embeddedRedisPid("emb-kill");
    expect(isRunning(redisPid)).toBe(true);
    crawler.child.kill("SIGKILL");
    expect(await crawler.exit).toEqual({ code: null, signal: "SIGKILL" });
    expect(await gone(redisPid, 2000), `redis-server ${redisPid} outlived its crawler`).toBe(true);
  }, 120_000);

  /**
   * One crawl of the site for the next two tests: the first starts a crawler in another pid namespace on its
   * collection while it runs, the second ends it with SIGHUP (/page/3 keeps it running that long).
   */
  let runningCrawl: Promise<{ crawler: Crawler; args: string[]; redisPid: number }> | undefined;
  const crawlToSignal = () =>
    (runningCrawl ??= (async () => {
      const args = ["--url", `${site.url}/`, "--collection", "emb-running", "--workers", "1", "--pageLoadTimeout", "5"];
      const crawler = startCrawler(args);
      await crawler.logged("crawl started");
      return { crawler, args, redisPid: await embeddedRedisPid("emb-running") };
    })());

  it("a crawler in another pid namespace (a container sharing the volume) never stops the server of a crawl running there", async () => {
    const { crawler: running, args, redisPid } = await crawlToSignal();
    const other = startCrawler(args, inAnotherNamespace);
    expect(await other.exit).toEqual({ code: 1, signal: null });
    expect(lastLine(other.log())).toMatch(/^crawl: this collection's embedded Redis runs for a crawler in another container \(pid \d+ there\); to run several crawler processes on one crawl, give them all the same --redisStoreUrl$/);
    expect(isRunning(redisPid)).toBe(true);
    expect(running.child.exitCode).toBeNull();
  }, 120_000);

  it("SIGHUP (the terminal closed) ends the crawl as SIGTERM does: exit 11, its redis-server gone", async () => {
    const { crawler, redisPid } = await crawlToSignal();
    expect(isRunning(redisPid)).toBe(true);
    crawler.child.kill("SIGHUP");
    expect(await crawler.exit, crawler.log().slice(-2000)).toEqual({ code: 11, signal: null });
    expect(logLines(crawler.log()).some((l) => l.message === "received SIGHUP")).toBe(true);
    expect(await gone(redisPid, 2000)).toBe(true);
  }, 120_000);

  it("two crawls started at once on one collection never run two redis-servers on its data folder", async () => {
    const quick = await startFaultySite(2, {});
    try {
      const args = ["--url", `${quick.url}/`, "--collection", "emb-twice", "--workers", "1"];
      const dataDir = join(cwd, "collections", "emb-twice", "redis");
      const crawlers = [startCrawler(args), startCrawler(args)];
      let most = 0;
      const watching = setInterval(() => (most = Math.max(most, existsSync(dataDir) ? redisServersIn(dataDir).length : 0)), 20);
      const exits = await Promise.all(crawlers.map((c) => c.exit));
      clearInterval(watching);
      expect(most).toBe(1);
      const codes = exits.map((e) => e.code).sort();
      expect(codes, crawlers.map((c) => c.log().slice(-1500)).join("\n")).toEqual([0, 1]);
      const refused = crawlers[exits.findIndex((e) => e.code === 1)];
      expect(lastLine(refused.log())).toMatch(/^crawl: this collection's embedded Redis belongs to a crawler that is still running \(pid \d+\); to run several crawler processes on one crawl, give them all the same --redisStoreUrl$/);
    } finally {
      await quick.close();
    }
  }, 120_000);

  it("killed mid-crawl: the crawler says so and exits 1 within seconds; the same command resumes and completes", async () => {
    // A few pages: the crawl is still loading one (at least half a second each) when the test kills the server.
    const steady = await startFaultySite(3, {});
    try {
      const args = ["--url", `${steady.url}/`, "--collection", "emb-dies", "--workers", "1", "--generateWACZ", "--statsFilename", join(cwd, "emb-dies.json")];
      const crawler = startCrawler(args);
      await crawler.logged("page crawled");
      const redisPid = await embeddedRedisPid("emb-dies");
      process.kill(redisPid, "SIGKILL");
      const killedAt = Date.now();
      const exit = await Promise.race([crawler.exit, new Promise<"hung">((r) => setTimeout(() => r("hung"), 60_000))]);
      const exitSeconds = (Date.now() - killedAt) / 1000;
      console.log(`membership: crawler exit ${exitSeconds.toFixed(1)} s after its embedded redis-server was SIGKILLed`);
      expect(exit, crawler.log().slice(-2000)).toEqual({ code: 1, signal: null });
      expect(lastLine(crawler.log())).toBe(
        `crawl: the embedded redis-server (pid ${redisPid}) exited unexpectedly (killed by SIGKILL): the crawl cannot go on; run the same command again to resume`,
      );

      const rerun = startCrawler(args);
      expect(await rerun.exit, rerun.log().slice(-2000)).toEqual({ code: 0, signal: null });
      expect(JSON.parse(readFileSync(join(cwd, "emb-dies.json"), "utf8"))).toMatchObject({ status: "done", committed: true, failed: 0 });
      expect([...new Set(await waczPages("emb-dies"))]).toEqual(steady.pagePaths.map((p) => `${steady.url}${p}`).sort());
    } finally {
      await steady.close();
    }
  }, 240_000);
});

describe("the sitemap reading when its reader dies", () => {
  it("a live member reads the sitemaps again; the crawl is committed with every page they list", async () => {
    const site = await startSeedSite("rules");
    const redis = await startTestRedis();
    try {
      const args = ["--url", site.seed, "--crawlId", "sitemap-reader", "--collection", "sitemap-reader", "--redisStoreUrl", redis.url, "--useSitemap", "--generateWACZ", "--workers", "1"];
      // The reader stops before queueing what it read, and is killed there.
      const reader = startCrawler(args, { env: { CRAWLER_TEST_PAUSE_AT: "sitemap-queue", CRAWLER_TEST_PAUSE_MS: "600000" } });
      await reader.logged("test pause at sitemap-queue");
      const survivor = startCrawler([...args, "--statsFilename", join(cwd, "sitemap-survivor.json")]);
      await survivor.logged("another crawler process is reading the sitemaps");
      reader.child.kill("SIGKILL");
      expect(await reader.exit).toEqual({ code: null, signal: "SIGKILL" });

      expect(await survivor.exit, survivor.log().slice(-3000)).toEqual({ code: 0, signal: null });
      const paths = [...new Set(await waczPages("sitemap-reader"))].map((u) => new URL(u).pathname).sort();
      expect(paths).toEqual([
        "/site/", "/site/linked.html", "/site/private/linked.html",
        "/site/from-sitemap/a.html", "/site/from-sitemap/b.html", "/site/from-sitemap/c.html",
        "/site/from-sitemap/old.html", "/site/from-sitemap/undated.html", "/site/private/listed.html",
      ].sort());
      expect(JSON.parse(readFileSync(join(cwd, "sitemap-survivor.json"), "utf8"))).toMatchObject({ status: "done", committed: true });
      expect(logLines(survivor.log()).some((l) => l.message === "the process reading the sitemaps is gone before the end: reading them here")).toBe(true);
    } finally {
      await redis.stop();
      await site.close();
    }
  }, 240_000);
});
