import { spawn } from "node:child_process";
import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// browsertrix-crawler's browser extras: --serviceWorker, --originOverride, --saveStorage,
// --rateLimitOnMatch, --waitOnDone, --debugAccessBrowser, --debugAccessRedis.

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const COMMON = ["--netIdleWait", "1", "--workers", "1", "--pageLoadTimeout", "20", ...NO_BEHAVIORS];

let cwd: string;
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-btx-browsermisc-"));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

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

function records(collection: string): RawRecord[] {
  const archive = join(cwd, "collections", collection, "archive");
  if (!existsSync(archive)) return [];
  return readdirSync(archive).filter((f) => /\.warc(\.gz)?$/.test(f)).flatMap((f) => readWarcRecords(join(archive, f)));
}

function responses(collection: string): Map<string, RawRecord> {
  return new Map(records(collection).filter((r) => r.headers.get("warc-type") === "response").map((r) => [r.headers.get("warc-target-uri") ?? "", r]));
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

describe("--serviceWorker", () => {
  // The page registers a worker that answers /answer itself (with what it fetched from /worker-data); the
  // network answers /answer otherwise. The page asks a second after the worker took over: what a worker
  // fetches before the crawler has attached to it is not seen.
  const SW = `self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => {
  if (new URL(e.request.url).pathname !== "/answer") return;
  e.respondWith(fetch("/worker-data").then((r) => r.text()).then((t) => new Response("from-sw:" + t, { headers: { "Content-Type": "text/plain" } })));
});`;
  const PAGE = `<script>
(async () => {
  await navigator.serviceWorker.register("/sw.js");
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) await new Promise((r) => navigator.serviceWorker.addEventListener("controllerchange", r));
  await new Promise((r) => setTimeout(r, 1000));
  document.title = await (await fetch("/answer")).text();
})().catch((e) => (document.title = "error " + e));
</script>`;
  let server: Awaited<ReturnType<typeof site>>;
  beforeAll(async () => {
    server = await site({
      "/": html(PAGE),
      "/sw.js": (_req, res) => res.writeHead(200, { "Content-Type": "text/javascript" }).end(SW),
      "/answer": (_req, res) => res.writeHead(200, { "Content-Type": "text/plain" }).end("from-network"),
      "/worker-data": (_req, res) => res.writeHead(200, { "Content-Type": "text/plain" }).end("worker-bytes"),
    });
  });
  afterAll(() => server.close());

  it("enabled: the page's service worker answers its fetch, its script and what it fetched are archived; disabled (default): requests bypass it", async () => {
    const enabled = await crawl("sw-enabled", ["--url", `${server.origin}/`, "--scopeType", "page", "--sw", "enabled", "--postLoadDelay", "2"]);
    expect(enabled.code).toBe(0);
    expect(server.hits.get("/sw.js")).toBeGreaterThanOrEqual(1);
    expect(server.hits.get("/answer") ?? 0).toBe(0);
    expect(pageTitles("sw-enabled")[`${server.origin}/`]).toBe("from-sw:worker-bytes");
    const enabledRecords = responses("sw-enabled");
    // The worker's answer never reached the network: there is no record of /answer; the worker's own requests are archived.
    expect([...enabledRecords.keys()].sort()).toEqual([`${server.origin}/`, `${server.origin}/sw.js`, `${server.origin}/worker-data`]);
    expect(enabledRecords.get(`${server.origin}/sw.js`)?.payload.toString()).toBe(SW);
    expect(enabledRecords.get(`${server.origin}/worker-data`)?.payload.toString()).toBe("worker-bytes");

    const disabled = await crawl("sw-disabled", ["--url", `${server.origin}/`, "--scopeType", "page", "--postLoadDelay", "2"]);
    expect(disabled.code).toBe(0);
    expect(pageTitles("sw-disabled")[`${server.origin}/`]).toBe("from-network");
    const disabledRecords = responses("sw-disabled");
    expect([...disabledRecords.keys()].sort()).toEqual([`${server.origin}/`, `${server.origin}/answer`]);
    expect(disabledRecords.get(`${server.origin}/answer`)?.payload.toString()).toBe("from-network");
  });

  it("a mode that is not one of browsertrix-crawler's: exit 4", async () => {
    const result = await crawl("sw-bad", ["--url", `${server.origin}/`, "--serviceWorker", "sometimes"]);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain("--serviceWorker takes one of disabled, disabled-if-profile, enabled");
  });
});

describe("--originOverride", () => {
  it("requests to the original origin are sent to the override; the archive keeps the original URLs with the override's bytes", async () => {
    const original = await site({ "/": html("original"), "/style.css": (_req, res) => res.writeHead(200, { "Content-Type": "text/css" }).end("original-css") });
    const hosts: string[] = [];
    const override = await site({
      "/": (req, res) => {
        hosts.push(req.headers.host ?? "");
        html(`override <link rel="stylesheet" href="/style.css"><a href="/next">next</a>`)(req, res);
      },
      "/style.css": (_req, res) => res.writeHead(200, { "Content-Type": "text/css" }).end("body { color: red }"),
      "/next": html("override next"),
    });
    try {
      const result = await crawl("override", ["--url", `${original.origin}/`, "--originOverride", `${original.origin}=${override.origin}`]);
      expect(result.code).toBe(0);
      expect([...original.hits.keys()]).toEqual([]);
      const stored = responses("override");
      expect([...stored.keys()].sort()).toEqual([`${original.origin}/`, `${original.origin}/next`, `${original.origin}/style.css`]);
      expect(stored.get(`${original.origin}/`)?.payload.toString()).toContain("override <link");
      expect(stored.get(`${original.origin}/style.css`)?.payload.toString()).toBe("body { color: red }");
      expect(stored.get(`${original.origin}/next`)?.payload.toString()).toContain("override next");
      const pages = Object.keys(pageTitles("override")).sort();
      expect(pages).toEqual([`${original.origin}/`, `${original.origin}/next`]);
      // Unlike browsertrix-crawler's (it fetches outside the browser), the browser names the override's host: Chromium may not change Host.
      expect(hosts[0]).toBe(new URL(override.origin).host);
    } finally {
      await original.close();
      await override.close();
    }
  });

  it("a value that is not orig=new: exit 4", async () => {
    const result = await crawl("override-bad", ["--url", "http://127.0.0.1:9/", "--originOverride", "http://127.0.0.1:9"]);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain("--originOverride takes orig=new");
  });
});

describe("--saveStorage", () => {
  it("the page's localStorage and sessionStorage are in its response record's WARC-JSON-Metadata, as browsertrix-crawler writes them", async () => {
    const server = await site({
      "/": html(`<script>localStorage.setItem("user", "ada"); localStorage.setItem("n", "1"); sessionStorage.setItem("tab", "x=1;y=\\"2\\"");</script>`),
    });
    try {
      const result = await crawl("storage", ["--url", `${server.origin}/`, "--scopeType", "page", "--saveStorage"]);
      expect(result.code).toBe(0);
      const stored = responses("storage");
      const metadata = stored.get(`${server.origin}/`)?.headers.get("warc-json-metadata");
      expect(metadata).toBeDefined();
      const parsed = JSON.parse(metadata ?? "{}") as { storage: string };
      expect(Object.keys(parsed)).toEqual(["storage"]);
      const storage = JSON.parse(parsed.storage) as { local: [string, string][]; session: [string, string][] };
      expect(Object.keys(storage)).toEqual(["local", "session"]);
      expect([...storage.local].sort()).toEqual([["n", "1"], ["user", "ada"]]);
      expect(storage.session).toEqual([["tab", 'x=1;y="2"']]);
      // Without --saveStorage nothing is added.
      const without = await crawl("no-storage", ["--url", `${server.origin}/`, "--scopeType", "page"]);
      expect(without.code).toBe(0);
      expect(responses("no-storage").get(`${server.origin}/`)?.headers.has("warc-json-metadata")).toBe(false);
    } finally {
      await server.close();
    }
  });
});

describe("--rateLimitOnMatch", () => {
  it("a page whose HTML matches is rate-limited (not archived, backed off, retried) until it answers normally", async () => {
    let served = 0;
    const server = await site({
      "/": (req, res) => {
        served += 1;
        if (served <= 2) return html(`<p>Please slow down: TOO-MANY-REQUESTS</p>`)(req, res);
        html("<p>the real page</p>")(req, res);
      },
    });
    try {
      const result = await crawl("on-match", ["--url", `${server.origin}/`, "--scopeType", "page", "--rateLimitOnMatch", "TOO-MANY-REQ[A-Z]+:200", "--rateLimitTimeout", "1", "--logging", "stats,debug"]);
      expect(result.code).toBe(0);
      expect(served).toBe(3);
      const stored = records("on-match").filter((r) => r.headers.get("warc-type") === "response");
      expect(stored.map((r) => r.payload.toString())).toEqual([expect.stringContaining("the real page")]);
      const limited = logLines(result.stderr).filter((l) => l.message.startsWith("page rate limited"));
      expect(limited.length).toBe(2);
      expect(limited[0].details).toMatchObject({ status: 200 });
    } finally {
      await server.close();
    }
  });

  it("a rule with another status does not match; the default rule (Incapsula) does", async () => {
    let served = 0;
    const server = await site({
      "/": (req, res) => html(`<script src="/_Incapsula_Resource?x=1"></script>TOO-MANY-REQUESTS`)(req, res),
      "/other": (req, res) => {
        served += 1;
        html(served === 1 ? `<script src="/_Incapsula_Resource?SWJIYLWA=1"></script>` : "fine")(req, res);
      },
      "/_Incapsula_Resource": (_req, res) => res.writeHead(200, { "Content-Type": "text/javascript" }).end(""),
    });
    try {
      const other = await crawl("on-match-status", ["--url", `${server.origin}/`, "--scopeType", "page", "--rateLimitOnMatch", "TOO-MANY-REQUESTS:429"]);
      expect(other.code).toBe(0);
      expect(responses("on-match-status").get(`${server.origin}/`)?.payload.toString()).toContain("TOO-MANY-REQUESTS");
      const byDefault = await crawl("on-match-default", ["--url", `${server.origin}/other`, "--scopeType", "page", "--rateLimitTimeout", "1"]);
      expect(byDefault.code).toBe(0);
      expect(served).toBe(2);
      expect(responses("on-match-default").get(`${server.origin}/other`)?.payload.toString()).toContain("fine");
    } finally {
      await server.close();
    }
  });

  it("a rule that is not a regular expression: exit 4", async () => {
    const result = await crawl("on-match-bad", ["--url", "http://127.0.0.1:9/", "--rateLimitOnMatch", "([a-z"]);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain("--rateLimitOnMatch: not a regular expression");
  });
});

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

describe("--waitOnDone", () => {
  it("the finished crawl waits for SIGTERM, then exits with the crawl's code (0)", async () => {
    const server = await site({ "/": html("done soon") });
    const crawlRun = startCrawl("wait-done", ["--url", `${server.origin}/`, "--scopeType", "page", "--generateWACZ", "--waitOnDone"]);
    try {
      const wacz = join(cwd, "collections", "wait-done", "wait-done.wacz");
      expect(await waitFor(() => crawlRun.stderr().includes("waiting for SIGINT or SIGTERM"), 120_000)).toBe(true);
      expect(existsSync(wacz)).toBe(true);
      // Still there a while after the end.
      await new Promise((r) => setTimeout(r, 2000));
      expect(crawlRun.child.exitCode).toBeNull();
      crawlRun.child.kill("SIGTERM");
      expect(await crawlRun.exited).toBe(0);
    } finally {
      crawlRun.child.kill("SIGKILL");
      await server.close();
    }
  });
});

describe("--waitOnDone, a failed crawl", () => {
  it("waits too, then exits with the crawl's code (1: the seed failed)", async () => {
    const server = await site({ "/": (_req, res) => res.writeHead(500, { "Content-Type": "text/html" }).end("broken") });
    const crawlRun = startCrawl("wait-failed", ["--url", `${server.origin}/`, "--scopeType", "page", "--failOnFailedSeed", "--failOnInvalidStatus", "--maxPageRetries", "0", "--waitOnDone"]);
    try {
      expect(await waitFor(() => crawlRun.stderr().includes("waiting for SIGINT or SIGTERM"), 120_000)).toBe(true);
      await new Promise((r) => setTimeout(r, 1000));
      expect(crawlRun.child.exitCode).toBeNull();
      crawlRun.child.kill("SIGINT");
      expect(await crawlRun.exited).toBe(1);
      expect(crawlRun.stderr()).toContain("(--failOnFailedSeed)");
    } finally {
      crawlRun.child.kill("SIGKILL");
      await server.close();
    }
  });
});

describe("--debugAccessBrowser and --debugAccessRedis", () => {
  it("while the crawl runs, the browser's DevTools protocol answers on 127.0.0.1:9222 and the embedded redis-server takes clients with the password it printed", async () => {
    const server = await site({ "/": html("slow page") });
    // DEBUG_ACCESS_HOST keeps both on loopback (set for every test in vitest.config.ts too).
    const crawlRun = startCrawl("debug-access", ["--url", `${server.origin}/`, "--scopeType", "page", "--postLoadDelay", "8", "--debugAccessBrowser", "--debugAccessRedis", "--logging", "stats,debug"], { DEBUG_ACCESS_HOST: "127.0.0.1" });
    try {
      // The page is loaded and sits in its --postLoadDelay.
      expect(await waitFor(() => (server.hits.get("/") ?? 0) > 0, 60_000)).toBe(true);
      // The server's hit comes before the tab commits its navigation: until then its target still shows about:blank.
      const pageTarget = async () => ((await getJson("http://127.0.0.1:9222/json/list")) as { url: string; type: string }[])
        .some((t) => t.type === "page" && t.url === `${server.origin}/`);
      expect(await waitFor(pageTarget, 5_000)).toBe(true);
      const version = (await getJson("http://127.0.0.1:9222/json/version")) as { Browser: string };
      expect(version.Browser).toMatch(/Chrom/);

      // The opened server wants the password printed once on stderr (test/debugAccessDoors.e2e.test.ts checks who else gets in).
      const line = logLines(crawlRun.stderr()).find((l) => l.message.startsWith("--debugAccessRedis: connect with"));
      const url = /redis:\/\/[^\s"]+/.exec(line?.message ?? "")?.[0] ?? "";
      expect(url).toMatch(/^redis:\/\/default:[0-9a-f]{48}@127\.0\.0\.1:\d+\/0$/);
      const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await redis.connect();
        expect(await redis.config("GET", "bind")).toEqual(["bind", "127.0.0.1"]);
      } finally {
        redis.disconnect();
      }
      expect(await crawlRun.exited).toBe(0);
    } finally {
      crawlRun.child.kill("SIGKILL");
      await server.close();
    }
  });
});
