// What domain crawls need besides (issue 29 item 5): request headers per host (--header, `headers:` by host in
// --config) on every request the crawl sends, the browser's and the crawler's own; robots.txt Crawl-delay with
// --robots. Host names map to loopback addresses (CRAWLER_TEST_HOSTS): no name is asked of DNS.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

interface Hit {
  host: string;
  path: string;
  headers: IncomingHttpHeaders;
  at: number;
}

const SITE = "site.test";
const SUB = "www.site.test";
const CDN = "cdn.test";
const PACED = "paced.test";
const TOKEN = "s3cr3t-token-value-1234";

let server: Server;
let port: number;
let hits: Hit[] = [];
let cwd: string;
const env = { CRAWLER_TEST_HOSTS: [`${SITE}=127.0.0.1`, `${SUB}=127.0.0.1`, `${CDN}=127.0.0.2`, `${PACED}=127.0.0.3`].join(",") };

const html = (body: string) => `<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`;
const at = (host: string, path: string) => `http://${host}:${port}${path}`;

function answer(host: string, path: string): { type: string; body: string | Buffer; status?: number; location?: string } | null {
  if (host === PACED) {
    if (path === "/robots.txt") return { type: "text/plain", body: "User-agent: *\nCrawl-delay: 2\nAllow: /\n" };
    const n = Number(/^\/p(\d)$/.exec(path)?.[1] ?? (path === "/" ? 0 : -1));
    if (n < 0) return null;
    return { type: "text/html", body: html(`<p>paced ${n}</p>${n === 0 ? [1, 2, 3].map((i) => `<a href="/p${i}">${i}</a>`).join("") : ""}`) };
  }
  if (host === CDN) return path === "/img.png" ? { type: "image/png", body: Buffer.from("89504e470d0a1a0a", "hex") } : null;
  switch (path) {
    case "/robots.txt":
      return { type: "text/plain", body: "User-agent: *\nAllow: /\n" };
    case "/":
      return {
        type: "text/html",
        body: html(`<p>home</p><img src="${at(CDN, "/img.png")}"><script src="/app.js"></script><a href="/moved">moved</a><a href="/data.bin">data</a>`),
      };
    case "/app.js":
      return { type: "text/javascript", body: "fetch('/api').then((r) => r.text()).then((t) => document.body.append(t));" };
    case "/api":
      return { type: "text/plain", body: "api answer" };
    case "/moved":
      return host === SITE ? { type: "text/plain", body: "", status: 302, location: at(SUB, "/final") } : null;
    case "/final":
      return { type: "text/html", body: html("<p>final</p>") };
    case "/data.bin":
      return { type: "application/octet-stream", body: Buffer.alloc(2048, 7) };
    default:
      return null;
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const host = (req.headers.host ?? "").replace(/:\d+$/, "");
    const path = (req.url ?? "/").split("?")[0];
    hits.push({ host, path, headers: req.headers, at: Date.now() });
    const found = answer(host, path);
    if (!found) return void res.writeHead(404).end();
    res.writeHead(found.status ?? 200, { "Content-Type": found.type, ...(found.location ? { Location: found.location } : {}) }).end(found.body);
  });
  // One server on every address the names map to (0.0.0.0 would listen beyond loopback).
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  const others = ["127.0.0.2", "127.0.0.3"].map((address) => {
    const twin = createServer((req, res) => server.emit("request", req, res));
    return new Promise<Server>((resolve) => twin.listen(port, address, () => resolve(twin)));
  });
  extraServers = await Promise.all(others);
  cwd = mkdtempSync(join(tmpdir(), "crawl-domain-"));
});
let extraServers: Server[] = [];
afterAll(async () => {
  await Promise.all([server, ...extraServers].map((s) => new Promise((resolve) => s?.close(resolve))));
  rmSync(cwd, { recursive: true, force: true });
});

function crawl(args: string[]): Promise<CliResult> {
  return runCli("crawl", [...args, "--cwd", cwd, "--behaviors", "", "--netIdleWait", "1"], { timeoutMs: 180_000, env });
}

/** Every file the crawl left, as text (WARC files gunzipped record by record). */
function everything(dir: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, name.name);
      if (name.isDirectory()) walk(path);
      else if (name.name.endsWith(".warc.gz")) out.push(...readWarcRecords(path).map((r) => r.block.toString("latin1")));
      else if (!name.name.endsWith(".wacz")) out.push(readFileSync(path, "latin1"));
    }
  };
  walk(dir);
  return out.join("\n");
}

describe("request headers by host (--header, headers: in --config)", () => {
  it("go on every request to their hosts, browser and crawler alike, redirect hops by their own host; never into logs or state", async () => {
    hits = [];
    const config = join(cwd, "headers.yaml");
    writeFileSync(config, `headers:\n  ${CDN}:\n    X-Cdn: yes\n  "*":\n    - "X-Everywhere: 1"\n`);
    const run = await crawl([
      "--url", at(SITE, "/"), "--collection", "headers", "--config", config, "--robots", "--saveState", "always", "--scopeType", "any", "--depth", "1",
      "--header", "From: archive@example.org", "--header", `${SITE} Authorization: Bearer ${TOKEN}`, "--logging", "debug",
    ]);
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const seen = (host: string, path: string) => hits.filter((h) => h.host === host && h.path === path);
    // The browser's requests (document, script, XHR, image), the crawler's own (robots.txt, the download
    // fetched outside the browser), and both hops of a redirect from site.test to www.site.test.
    const onSite = [[SITE, "/"], [SITE, "/app.js"], [SITE, "/api"], [SITE, "/robots.txt"], [SITE, "/data.bin"], [SITE, "/moved"], [SUB, "/final"]];
    for (const [host, path] of onSite) {
      const requests = seen(host, path);
      expect(requests.length, `${host}${path}`).toBeGreaterThan(0);
      for (const { headers } of requests) {
        expect({ at: `${host}${path}`, from: headers.from, auth: headers.authorization, everywhere: headers["x-everywhere"], cdn: headers["x-cdn"] })
          .toEqual({ at: `${host}${path}`, from: "archive@example.org", auth: `Bearer ${TOKEN}`, everywhere: "1", cdn: undefined });
      }
    }
    const cdn = seen(CDN, "/img.png");
    expect(cdn.length).toBeGreaterThan(0);
    for (const { headers } of cdn) {
      expect({ from: headers.from, auth: headers.authorization, everywhere: headers["x-everywhere"], cdn: headers["x-cdn"] })
        .toEqual({ from: "archive@example.org", auth: undefined, everywhere: "1", cdn: "yes" });
    }
    const dir = join(cwd, "collections", "headers");
    const records = readdirSync(join(dir, "archive")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
    const responses = records.filter((r) => r.headers.get("warc-type") === "response").map((r) => r.headers.get("warc-target-uri"));
    // A request record holds the headers as sent.
    for (const url of [at(SITE, "/"), at(SITE, "/api"), at(SITE, "/data.bin")]) {
      const request = records.find((r) => r.headers.get("warc-type") === "request" && r.headers.get("warc-target-uri") === url);
      expect(request?.httpHead, url).toMatch(/\r\nFrom: archive@example\.org(\r\n|$)/i);
      expect(request?.httpHead, url).toMatch(/\r\nX-Everywhere: 1(\r\n|$)/i);
    }
    expect(responses).toEqual(expect.arrayContaining([at(SITE, "/"), at(SITE, "/api"), at(SITE, "/data.bin"), at(SUB, "/final"), at(CDN, "/img.png")]));
    // The token is sent, not kept: not in the log, the saved state, the reports or the pages list (the WARC
    // request records hold what was sent, as they must).
    expect(run.stderr).not.toContain(TOKEN);
    const kept = readdirSync(join(dir, "crawls")).map((f) => readFileSync(join(dir, "crawls", f), "utf8")).join("\n");
    expect(kept).toMatch(/secretsWithheld/);
    expect(kept).not.toContain(TOKEN);
    expect(kept).not.toContain("archive@example.org");
    const outsideWarcs = everything(join(dir, "pages")) + (existsSync(join(dir, "reports")) ? everything(join(dir, "reports")) : "");
    expect(outsideWarcs).not.toContain(TOKEN);
  });

  it("a malformed --header is one line and exit code 4, nothing crawled", async () => {
    for (const [value, message] of [
      ["NoColon", /--header takes "Name: value" or "host Name: value"/],
      ["a b c: d", /--header takes "Name: value" or "host Name: value"/],
      ["Host: x.test", /Host cannot be set/],
      ["Bad\u0001Name: x", /is not a header name/],
    ] as const) {
      const run = await crawl(["--url", at(SITE, "/"), "--collection", "bad", "--header", value]);
      expect(run.code).toBe(4);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    }
    expect(existsSync(join(cwd, "collections", "bad"))).toBe(false);
  });
});

describe("robots.txt Crawl-delay (--robots)", () => {
  it("page loads on the host start at least Crawl-delay apart, across workers", async () => {
    hits = [];
    const run = await crawl(["--url", at(PACED, "/"), "--collection", "paced", "--robots", "--workers", "2", "--scopeType", "prefix"]);
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const loads = hits.filter((h) => h.host === PACED && /^\/(p\d)?$/.test(h.path));
    expect(loads.map((h) => h.path).sort()).toEqual(["/", "/p1", "/p2", "/p3"]);
    const gaps = loads.slice(1).map((h, i) => h.at - loads[i].at);
    // Crawl-delay: 2 (seconds). Turns are taken once the tab is ready (before, a worker's first turn went to
    // opening its tab: 742 ms seen); what remains is the browser's own latency, most for a tab's first page
    // (Chromium starts the site's renderer): 1.3-1.7 s seen for a first gap on a loaded machine, 1.9-2.2 s for
    // the others. Without Crawl-delay two workers load p1 and p2 at once.
    expect(gaps.filter((gap) => gap < 1000), `gaps ${gaps.join(", ")} ms`).toEqual([]);
    expect(loads[3].at - loads[0].at, `gaps ${gaps.join(", ")} ms`).toBeGreaterThanOrEqual(5000);
  });
});
