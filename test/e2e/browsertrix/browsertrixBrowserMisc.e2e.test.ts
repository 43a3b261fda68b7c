import { spawn } from "node:child_process";
import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { JobSlots } from "../../helpers/jobSlots.js";
import { crawlUsageRuns, type UsageRun } from "../../helpers/usageRuns.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// browsertrix-crawler's browser extras: --serviceWorker, --originOverride, --saveStorage,
// --rateLimitOnMatch, --waitOnDone, --debugAccessBrowser, --debugAccessRedis.
//
// Every page is on a loopback server of its own (its own origin), so one crawl whose flags suit several
// tests crawls their pages together and each test reads its own origin's records: the crawl with the
// defaults (service workers bypassed, no storage, the default --rateLimitOnMatch rule) also overrides an
// origin; the crawl with the opt-ins (--sw enabled, --saveStorage, rules of its own) holds the pages the
// rules are about. The crawls are queued in beforeAll, two at a time; the usage errors run in one node process.

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const COMMON = ["--netIdleWait", "1", "--workers", "1", "--pageLoadTimeout", "20", ...NO_BEHAVIORS];

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
type Site = Awaited<ReturnType<typeof site>>;

/** A loopback server answering from a route table; counts every request by path. */
async function site(routes: Record<string, Handler>): Promise<{ origin: string; hits: Map<string, number>; close(): Promise<void> }> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes[path];
    if (route) route(req, res);
    else res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return { origin: `http://127.0.0.1:${address.port}`, hits, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const html = (body: string): Handler => (_req, res) => res.writeHead(200, { "Content-Type": "text/html" }).end(`<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`);

let cwd: string;

function records(collection: string): RawRecord[] {
  const archive = join(cwd, "collections", collection, "archive");
  if (!existsSync(archive)) return [];
  return readdirSync(archive).filter((f) => /\.warc(\.gz)?$/.test(f)).flatMap((f) => readWarcRecords(join(archive, f)));
}

/** Response records by URL: all of the collection's, or those of one origin. */
function responses(collection: string, origin = ""): Map<string, RawRecord> {
  return new Map(records(collection).filter((r) => r.headers.get("warc-type") === "response").map((r): [string, RawRecord] => [r.headers.get("warc-target-uri") ?? "", r])
    .filter(([url]) => url.startsWith(origin)));
}

/** Title of every listed page (seeds and others), by URL. */
function pageTitles(collection: string): Record<string, string> {
  const files = ["pages.jsonl", "extraPages.jsonl"].map((f) => join(cwd, "collections", collection, "pages", f)).filter((f) => existsSync(f));
  const lines = files.flatMap((f) => readFileSync(f, "utf8").trim().split("\n").slice(1)).map((l) => JSON.parse(l) as { url: string; title?: string });
  return Object.fromEntries(lines.map((l) => [l.url, l.title ?? ""]));
}

function crawl(collection: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runCli("crawl", ["--cwd", cwd, "--collection", collection, ...COMMON, ...args], { timeoutMs: 240_000, env });
}

/** Start a crawl as a child process that the test talks to while it runs. */
function startCrawl(collection: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ["dist/src/cli/crawl.js", "--cwd", cwd, "--collection", collection, ...COMMON, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

async function waitFor(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

function getJson(url: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => {
        try {
          resolve(JSON.parse(body));
        } catch (err) {
          reject(err);
        }
      });
    }).on("error", reject);
  });
}

// The page registers a worker that answers /answer itself (with what it fetched from /worker-data); the
// network answers /answer otherwise. The page asks a second after the worker took over: what a worker
// fetches before the crawler has attached to it is not seen.
const SW = `self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => {
  if (new URL(e.request.url).pathname !== "/answer") return;
  e.respondWith(fetch("/worker-data").then((r) => r.text()).then((t) => new Response("from-sw:" + t, { headers: { "Content-Type": "text/plain" } })));
});`;
const SW_PAGE = `<script>
(async () => {
  await navigator.serviceWorker.register("/sw.js");
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) await new Promise((r) => navigator.serviceWorker.addEventListener("controllerchange", r));
  await new Promise((r) => setTimeout(r, 1000));
  document.title = await (await fetch("/answer")).text();
})().catch((e) => (document.title = "error " + e));
</script>`;
const swSite = () => site({
  "/": html(SW_PAGE),
  "/sw.js": (_req, res) => res.writeHead(200, { "Content-Type": "text/javascript" }).end(SW),
  "/answer": (_req, res) => res.writeHead(200, { "Content-Type": "text/plain" }).end("from-network"),
  "/worker-data": (_req, res) => res.writeHead(200, { "Content-Type": "text/plain" }).end("worker-bytes"),
});

/** What the crawl with --debugAccessBrowser, --debugAccessRedis and --waitOnDone showed while it ran. */
interface DebugRun {
  pageLoaded: boolean;
  pageTarget: boolean;
  browser: string;
  redisUrl: string;
  redisBind: unknown;
  /** The crawl's exit code once the debug checks were done (null: still running). */
  runningAfterChecks: number | null;
  waiting: boolean;
  waczWhileWaiting: boolean;
  /** The exit code two seconds after it said it waits (null: still waiting). */
  twoSecondsLater: number | null;
  code: number | null;
}

async function debugAccessThenWaitOnDone(): Promise<DebugRun> {
  const server = await site({ "/": html("slow page") });
  // DEBUG_ACCESS_HOST keeps both on loopback (set for every test in vitest.config.ts too).
  const crawlRun = startCrawl("debug-access", ["--url", `${server.origin}/`, "--scopeType", "page", "--postLoadDelay", "8", "--debugAccessBrowser", "--debugAccessRedis",
    "--logging", "stats,debug", "--generateWACZ", "--waitOnDone"], { DEBUG_ACCESS_HOST: "127.0.0.1" });
  try {
    // The page is loaded and sits in its --postLoadDelay.
    const pageLoaded = await waitFor(() => (server.hits.get("/") ?? 0) > 0, 60_000);
    // The server's hit comes before the tab commits its navigation: until then its target still shows about:blank.
    const isPageTarget = async () => ((await getJson("http://127.0.0.1:9222/json/list")) as { url: string; type: string }[])
      .some((t) => t.type === "page" && t.url === `${server.origin}/`);
    const pageTarget = pageLoaded && (await waitFor(isPageTarget, 5_000));
    const browser = ((await getJson("http://127.0.0.1:9222/json/version")) as { Browser: string }).Browser;

    // The opened server wants the password printed once on stderr (test/debugAccessDoors.e2e.test.ts checks who else gets in).
    const line = logLines(crawlRun.stderr()).find((l) => l.message.startsWith("--debugAccessRedis: connect with"));
    const redisUrl = /redis:\/\/[^\s"]+/.exec(line?.message ?? "")?.[0] ?? "";
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    let redisBind: unknown;
    try {
      await redis.connect();
      redisBind = await redis.config("GET", "bind");
    } finally {
      redis.disconnect();
    }
    const runningAfterChecks = crawlRun.child.exitCode;

    const wacz = join(cwd, "collections", "debug-access", "debug-access.wacz");
    const waiting = await waitFor(() => crawlRun.stderr().includes("waiting for SIGINT or SIGTERM"), 120_000);
    const waczWhileWaiting = existsSync(wacz);
    // Still there a while after the end.
    await new Promise((r) => setTimeout(r, 2000));
    const twoSecondsLater = crawlRun.child.exitCode;
    crawlRun.child.kill("SIGTERM");
    const code = await crawlRun.exited;
    return { pageLoaded, pageTarget, browser, redisUrl, redisBind, runningAfterChecks, waiting, waczWhileWaiting, twoSecondsLater, code };
  } finally {
    crawlRun.child.kill("SIGKILL");
    await server.close();
  }
}

/** A crawl whose seed fails, with --waitOnDone: what it showed, and its exit code after SIGINT. */
async function failedWaitOnDone(): Promise<{ waiting: boolean; aSecondLater: number | null; code: number | null; stderr: string }> {
  const server = await site({ "/": (_req, res) => res.writeHead(500, { "Content-Type": "text/html" }).end("broken") });
  const crawlRun = startCrawl("wait-failed", ["--url", `${server.origin}/`, "--scopeType", "page", "--failOnFailedSeed", "--failOnInvalidStatus", "--maxPageRetries", "0", "--waitOnDone"]);
  try {
    const waiting = await waitFor(() => crawlRun.stderr().includes("waiting for SIGINT or SIGTERM"), 120_000);
    await new Promise((r) => setTimeout(r, 1000));
    const aSecondLater = crawlRun.child.exitCode;
    crawlRun.child.kill("SIGINT");
    const code = await crawlRun.exited;
    return { waiting, aSecondLater, code, stderr: crawlRun.stderr() };
  } finally {
    crawlRun.child.kill("SIGKILL");
    await server.close();
  }
}

let swOff: Site;
let swOn: Site;
let storage: Site;
let original: Site;
let override: Site;
/** Hosts the override was asked for. */
const overrideHosts: string[] = [];
let onMatch: Site;
/** Requests of onMatch's page: the first two are rate-limited. */
let onMatchServed = 0;
/** A page holding the default rule's text and another rule's, whose status that rule does not name. */
let otherStatus: Site;
let incapsula: Site;
/** Requests of incapsula's page: the first is rate-limited by the default rule. */
let incapsulaServed = 0;

let shared: {
  /** --sw disabled, no --saveStorage, the default --rateLimitOnMatch rule; --originOverride. */
  defaults: Promise<CliResult>;
  /** --sw enabled, --saveStorage, two --rateLimitOnMatch rules of its own. */
  optIns: Promise<CliResult>;
  debugAccess: Promise<DebugRun>;
  failedWaitOnDone: ReturnType<typeof failedWaitOnDone>;
  usage: Promise<UsageRun[]>;
};

const BAD_USAGE: [string[], string][] = [
  [["--url", "http://127.0.0.1:9/", "--serviceWorker", "sometimes"], "--serviceWorker takes one of disabled, disabled-if-profile, enabled"],
  [["--url", "http://127.0.0.1:9/", "--originOverride", "http://127.0.0.1:9"], "--originOverride takes orig=new"],
  [["--url", "http://127.0.0.1:9/", "--rateLimitOnMatch", "([a-z"], "--rateLimitOnMatch: not a regular expression"],
];
const usage = async (i: number) => (await shared.usage)[i];

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-btx-browsermisc-"));
  // Two sites for the two modes: the crawl that uses the worker must not see the other's requests of /answer.
  swOff = await swSite();
  swOn = await swSite();
  storage = await site({
    "/": html(`<script>localStorage.setItem("user", "ada"); localStorage.setItem("n", "1"); sessionStorage.setItem("tab", "x=1;y=\\"2\\"");</script>`),
  });
  original = await site({ "/": html("original"), "/style.css": (_req, res) => res.writeHead(200, { "Content-Type": "text/css" }).end("original-css") });
  override = await site({
    "/": (req, res) => {
      overrideHosts.push(req.headers.host ?? "");
      html(`override <link rel="stylesheet" href="/style.css"><a href="/next">next</a>`)(req, res);
    },
    "/style.css": (_req, res) => res.writeHead(200, { "Content-Type": "text/css" }).end("body { color: red }"),
    "/next": html("override next"),
  });
  onMatch = await site({
    "/": (req, res) => {
      onMatchServed += 1;
      if (onMatchServed <= 2) return html(`<p>Please slow down: TOO-MANY-REQUESTS</p>`)(req, res);
      html("<p>the real page</p>")(req, res);
    },
  });
  otherStatus = await site({
    "/": (req, res) => html(`<script src="/_Incapsula_Resource?x=1"></script>TOO-MANY-CALLS`)(req, res),
    "/_Incapsula_Resource": (_req, res) => res.writeHead(200, { "Content-Type": "text/javascript" }).end(""),
  });
  incapsula = await site({
    "/other": (req, res) => {
      incapsulaServed += 1;
      html(incapsulaServed === 1 ? `<script src="/_Incapsula_Resource?SWJIYLWA=1"></script>` : "fine")(req, res);
    },
    "/_Incapsula_Resource": (_req, res) => res.writeHead(200, { "Content-Type": "text/javascript" }).end(""),
  });

  const slots = new JobSlots(2);
  shared = {
    debugAccess: slots.run(debugAccessThenWaitOnDone),
    // No --scopeType page: none of these pages links anywhere but the override's to its /next, which that test wants crawled.
    defaults: slots.run(() => crawl("defaults", [
      "--url", `${swOff.origin}/`, "--url", `${storage.origin}/`, "--url", `${incapsula.origin}/other`, "--url", `${original.origin}/`,
      "--originOverride", `${original.origin}=${override.origin}`, "--rateLimitTimeout", "1", "--postLoadDelay", "2",
    ])),
    optIns: slots.run(() => crawl("opt-ins", [
      "--url", `${swOn.origin}/`, "--url", `${storage.origin}/`, "--url", `${onMatch.origin}/`, "--url", `${otherStatus.origin}/`, "--scopeType", "page",
      "--sw", "enabled", "--saveStorage", "--rateLimitOnMatch", "TOO-MANY-REQ[A-Z]+:200", "--rateLimitOnMatch", "TOO-MANY-CALLS:429", "--rateLimitTimeout", "1",
      "--postLoadDelay", "2", "--logging", "stats,debug",
    ])),
    failedWaitOnDone: slots.run(failedWaitOnDone),
    usage: slots.run(() => crawlUsageRuns(BAD_USAGE.map(([args]) => ["--cwd", cwd, "--collection", "bad", ...COMMON, ...args]))),
  };
});
afterAll(async () => {
  // Let the queued crawls end before their sites and folder go.
  if (shared) await Promise.allSettled(Object.values(shared));
  for (const s of [swOff, swOn, storage, original, override, onMatch, otherStatus, incapsula]) await s?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("--serviceWorker", () => {
  it("enabled: the page's service worker answers its fetch, its script and what it fetched are archived; disabled (default): requests bypass it", async () => {
    const enabled = await shared.optIns;
    expect(enabled.code, enabled.stderr.slice(-3000)).toBe(0);
    expect(swOn.hits.get("/sw.js")).toBeGreaterThanOrEqual(1);
    expect(swOn.hits.get("/answer") ?? 0).toBe(0);
    expect(pageTitles("opt-ins")[`${swOn.origin}/`]).toBe("from-sw:worker-bytes");
    const enabledRecords = responses("opt-ins", swOn.origin);
    // The worker's answer never reached the network: there is no record of /answer; the worker's own requests are archived.
    expect([...enabledRecords.keys()].sort()).toEqual([`${swOn.origin}/`, `${swOn.origin}/sw.js`, `${swOn.origin}/worker-data`]);
    expect(enabledRecords.get(`${swOn.origin}/sw.js`)?.payload.toString()).toBe(SW);
    expect(enabledRecords.get(`${swOn.origin}/worker-data`)?.payload.toString()).toBe("worker-bytes");

    const disabled = await shared.defaults;
    expect(disabled.code, disabled.stderr.slice(-3000)).toBe(0);
    expect(pageTitles("defaults")[`${swOff.origin}/`]).toBe("from-network");
    const disabledRecords = responses("defaults", swOff.origin);
    expect([...disabledRecords.keys()].sort()).toEqual([`${swOff.origin}/`, `${swOff.origin}/answer`]);
    expect(disabledRecords.get(`${swOff.origin}/answer`)?.payload.toString()).toBe("from-network");
  }, 250_000);

  it("a mode that is not one of browsertrix-crawler's: exit 4", async () => {
    const result = await usage(0);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(BAD_USAGE[0][1]);
  }, 250_000);
});

describe("--originOverride", () => {
  it("requests to the original origin are sent to the override; the archive keeps the original URLs with the override's bytes", async () => {
    const result = await shared.defaults;
    expect(result.code).toBe(0);
    expect([...original.hits.keys()]).toEqual([]);
    const stored = responses("defaults", original.origin);
    expect([...stored.keys()].sort()).toEqual([`${original.origin}/`, `${original.origin}/next`, `${original.origin}/style.css`]);
    expect(stored.get(`${original.origin}/`)?.payload.toString()).toContain("override <link");
    expect(stored.get(`${original.origin}/style.css`)?.payload.toString()).toBe("body { color: red }");
    expect(stored.get(`${original.origin}/next`)?.payload.toString()).toContain("override next");
    const pages = Object.keys(pageTitles("defaults")).filter((u) => u.startsWith(original.origin)).sort();
    expect(pages).toEqual([`${original.origin}/`, `${original.origin}/next`]);
    // Unlike browsertrix-crawler's (it fetches outside the browser), the browser names the override's host: Chromium may not change Host.
    expect(overrideHosts[0]).toBe(new URL(override.origin).host);
  }, 250_000);

  it("a value that is not orig=new: exit 4", async () => {
    const result = await usage(1);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(BAD_USAGE[1][1]);
  }, 250_000);
});

describe("--saveStorage", () => {
  it("the page's localStorage and sessionStorage are in its response record's WARC-JSON-Metadata, as browsertrix-crawler writes them", async () => {
    const result = await shared.optIns;
    expect(result.code).toBe(0);
    const stored = responses("opt-ins");
    const metadata = stored.get(`${storage.origin}/`)?.headers.get("warc-json-metadata");
    expect(metadata).toBeDefined();
    const parsed = JSON.parse(metadata ?? "{}") as { storage: string };
    expect(Object.keys(parsed)).toEqual(["storage"]);
    const parsedStorage = JSON.parse(parsed.storage) as { local: [string, string][]; session: [string, string][] };
    expect(Object.keys(parsedStorage)).toEqual(["local", "session"]);
    expect([...parsedStorage.local].sort()).toEqual([["n", "1"], ["user", "ada"]]);
    expect(parsedStorage.session).toEqual([["tab", 'x=1;y="2"']]);
    // Without --saveStorage nothing is added.
    const without = await shared.defaults;
    expect(without.code).toBe(0);
    expect(responses("defaults").get(`${storage.origin}/`)?.headers.has("warc-json-metadata")).toBe(false);
  }, 250_000);
});

describe("--rateLimitOnMatch", () => {
  it("a page whose HTML matches is rate-limited (not archived, backed off, retried) until it answers normally", async () => {
    const result = await shared.optIns;
    expect(result.code).toBe(0);
    expect(onMatchServed).toBe(3);
    const stored = records("opt-ins").filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === `${onMatch.origin}/`);
    expect(stored.map((r) => r.payload.toString())).toEqual([expect.stringContaining("the real page")]);
    const limited = logLines(result.stderr).filter((l) => l.message.startsWith("page rate limited"));
    expect(limited.length).toBe(2);
    expect(limited[0].details).toMatchObject({ status: 200, url: `${onMatch.origin}/` });
  }, 250_000);

  it("a rule with another status does not match (nor does the default rule, replaced by the rules given); the default rule (Incapsula) does", async () => {
    const other = await shared.optIns;
    expect(other.code).toBe(0);
    expect(responses("opt-ins").get(`${otherStatus.origin}/`)?.payload.toString()).toContain("TOO-MANY-CALLS");
    const byDefault = await shared.defaults;
    expect(byDefault.code).toBe(0);
    expect(incapsulaServed).toBe(2);
    expect(responses("defaults").get(`${incapsula.origin}/other`)?.payload.toString()).toContain("fine");
  }, 250_000);

  it("a rule that is not a regular expression: exit 4", async () => {
    const result = await usage(2);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(BAD_USAGE[2][1]);
  }, 250_000);
});

describe("--waitOnDone", () => {
  it("the finished crawl waits for SIGTERM, then exits with the crawl's code (0)", async () => {
    const run = await shared.debugAccess;
    expect(run.waiting).toBe(true);
    expect(run.waczWhileWaiting).toBe(true);
    expect(run.twoSecondsLater).toBeNull();
    expect(run.code).toBe(0);
  }, 250_000);
});

describe("--waitOnDone, a failed crawl", () => {
  it("waits too, then exits with the crawl's code (1: the seed failed)", async () => {
    const run = await shared.failedWaitOnDone;
    expect(run.waiting).toBe(true);
    expect(run.aSecondLater).toBeNull();
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("(--failOnFailedSeed)");
  }, 250_000);
});

describe("--debugAccessBrowser and --debugAccessRedis", () => {
  it("while the crawl runs, the browser's DevTools protocol answers on 127.0.0.1:9222 and the embedded redis-server takes clients with the password it printed", async () => {
    const run = await shared.debugAccess;
    expect(run.pageLoaded).toBe(true);
    expect(run.pageTarget).toBe(true);
    expect(run.browser).toMatch(/Chrom/);
    expect(run.redisUrl).toMatch(/^redis:\/\/default:[0-9a-f]{48}@127\.0\.0\.1:\d+\/0$/);
    expect(run.redisBind).toEqual(["bind", "127.0.0.1"]);
    // All of it while the crawl was still running (--waitOnDone then kept it after its end: exit 0 above).
    expect(run.runningAfterChecks).toBeNull();
  }, 250_000);
});
