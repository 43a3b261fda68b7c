import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { connect } from "node:net";
import { parseProxyUrl } from "../../../src/proxy/proxySettings.js";
import { openSshTunnel } from "../../../src/proxy/sshTunnel.js";
import { crawlInterruptedAfterFirstPage, logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { startMicrosocks, startSshd, startTinyproxy, type RunningProxy, type RunningSshd } from "../../helpers/proxyServers.js";
import { startProxySite, type ProxySite, type SiteRequest } from "../../helpers/proxySite.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { closedPort } from "../../helpers/closedPort.js";

// Proxies: real tinyproxy (HTTP, credentials), microsocks (SOCKS5, credentials) and sshd (ssh -D) on
// loopback. For each, a crawl with robots.txt, a sitemap, subresources and a direct fetch must reach the
// site only through the proxy: the site looks up which program opened each connection (ss -p).

const USER = "crawler";
const PASSWORD = "pr0xy-pass";
// The proxied site on its own address (proxies get IP literals: they resolve names themselves, and tests
// never ask DNS); the second site, for --proxyServerConfig, by a name mapped for the crawler only.
const PROXIED_HOST = "127.0.0.3";
const DIRECT_HOST = "127.0.0.4";
const DIRECT_NAME = "direct.proxytest";
// A site by a name only the proxies know (tinyproxy's Upstream rule, microsocks' own /etc/hosts): the
// crawler, which asks no DNS in tests (CRAWLER_TEST_NO_DNS), cannot resolve it, as on a machine whose
// only way out is the proxy.
const NAMED_HOST = "127.0.0.5";
const NAMED_NAME = "named.proxytest";

let dir: string;
let site: ProxySite;
let direct: ProxySite;
let named: ProxySite;
let tinyproxy: RunningProxy;
let socks: RunningProxy;
let sshd: RunningSshd;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "crawl-proxy-"));
  site = await startProxySite(PROXIED_HOST);
  direct = await startProxySite(DIRECT_HOST, DIRECT_NAME);
  named = await startProxySite(NAMED_HOST, NAMED_NAME);
  tinyproxy = await startTinyproxy(dir, USER, PASSWORD, { [NAMED_NAME]: `${NAMED_HOST}:${named.port}` });
  socks = await startMicrosocks(dir, USER, PASSWORD, { [NAMED_NAME]: NAMED_HOST });
  sshd = await startSshd(dir, [`${PROXIED_HOST}:${site.port}`]);
});

afterAll(async () => {
  for (const proxy of [tinyproxy, socks, sshd]) proxy?.stop();
  await site?.close();
  await direct?.close();
  await named?.close();
  rmSync(dir, { recursive: true, force: true });
});

const ENV = { PROXY_SERVER: "", PROXY_HOST: "", PROXY_PORT: "", CRAWLER_TEST_HOSTS: `${DIRECT_NAME}=${DIRECT_HOST}` };
const CRAWL_FLAGS = ["--robots", "--useSitemap", "--behaviors", "", "--workers", "2", "--netIdleWait", "1"];

interface Crawl {
  result: CliResult;
  /** WARC-Target-URI of every response and revisit record, sorted, without duplicates. */
  urls: string[];
  /** What the sites saw during this crawl. */
  seen: SiteRequest[];
  seenDirect: SiteRequest[];
  ms: number;
}

let collections = 0;

function recordsOf(collection: string) {
  const archive = join(dir, "collections", collection, "archive");
  return existsSync(archive) ? readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f))) : [];
}

function urlsOf(records: ReturnType<typeof recordsOf>): string[] {
  return [...new Set(records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type") ?? "")).map((r) => r.headers.get("warc-target-uri") ?? ""))].sort();
}

/** WARC-Target-URI of every response and revisit record of the collection, sorted, without duplicates. */
const archivedUrls = (collection: string) => urlsOf(recordsOf(collection));

async function crawl(seeds: string[], args: string[], name?: string): Promise<Crawl> {
  const collection = name ?? `proxy-${++collections}`;
  const [before, beforeDirect] = [site.requests.length, direct.requests.length];
  const started = Date.now();
  const result = await runCli("crawl", [...seeds.flatMap((s) => ["--url", s]), "--cwd", dir, "--collection", collection, ...CRAWL_FLAGS, ...args], { env: ENV, timeoutMs: 120_000 });
  const ms = Date.now() - started;
  const records = recordsOf(collection);
  const urls = urlsOf(records);
  // Proxy passwords are never written: not in the log, the pages lists or any WARC record.
  expect(result.stderr).not.toContain(PASSWORD);
  for (const record of records) expect(record.block.toString("latin1")).not.toContain(PASSWORD);
  const logs = join(dir, "collections", collection, "logs");
  for (const file of existsSync(logs) ? readdirSync(logs) : []) expect(readFileSync(join(logs, file), "utf8")).not.toContain(PASSWORD);
  return { result, urls, seen: site.requests.slice(before), seenDirect: direct.requests.slice(beforeDirect), ms };
}

/** Every kind of request the crawl makes, each seen by the site. */
function expectEveryKind(seen: SiteRequest[]): void {
  const paths = seen.map((r) => r.path);
  expect(paths).toEqual(expect.arrayContaining(["/robots.txt", "/sitemap.xml", "/", "/page2.html", "/from-sitemap.html", "/img.png", "/style.css"]));
  // The page asked for a range of /clip.mp4 and got a 206: the crawler fetched it whole itself.
  expect(seen.filter((r) => r.path === "/clip.mp4" && r.range !== null).length).toBeGreaterThan(0);
  expect(seen.filter((r) => r.path === "/clip.mp4" && r.range === null).length).toBeGreaterThan(0);
}

let baseline: Crawl;

describe("proxies", () => {
  it("without a proxy, the crawler connects to the site itself, and Chromium through the crawler's relay (the reference crawl)", async () => {
    baseline = await crawl([`${site.origin}/`], []);
    expect(baseline.result.code, baseline.result.stderr.slice(-2000)).toBe(0);
    expectEveryKind(baseline.seen);
    // Chromium never connects to a site itself: the relay connects where the address policy approved (issue 28, item 5).
    expect(new Set(baseline.seen.map((r) => r.peer))).toEqual(new Set(["node"]));
    expect(baseline.urls).toEqual(expect.arrayContaining([`${site.origin}/`, `${site.origin}/page2.html`, `${site.origin}/from-sitemap.html`, `${site.origin}/clip.mp4`]));
    console.log(`reference crawl: ${baseline.ms} ms, ${baseline.seen.length} requests`);
  }, 150_000);

  it("an ssh:// proxy (ssh -D to a local sshd, host key checked): every request goes through the tunnel", async () => {
    const logBefore = sshd.log().length;
    const run = await crawl([`${site.origin}/`], ["--proxyServer", sshd.url, "--sshProxyPrivateKeyFile", sshd.privateKeyFile, "--sshProxyKnownHostsFile", sshd.knownHostsFile]);
    expect(run.result.code, run.result.stderr.slice(-2000)).toBe(0);
    expectEveryKind(run.seen);
    expect(new Set(run.seen.map((r) => r.peer))).toEqual(new Set(["sshd"]));
    const opened = [...sshd.log().slice(logBefore).matchAll(/server_request_direct_tcpip: originator \S+ port \d+, target (\S+) port (\d+)/g)].map((m) => `${m[1]}:${m[2]}`);
    expect(opened).toContain(`${PROXIED_HOST}:${site.port}`);
    expect(run.urls).toEqual(baseline.urls);
    console.log(`ssh proxy crawl: ${run.ms} ms, ${run.seen.length} requests`);
  }, 150_000);

  it("--proxyServerConfig: one host through the proxy, the other directly", async () => {
    const config = join(dir, "proxies.yaml");
    writeFileSync(config, [
      "matchHosts:",
      `  "^http://127\\\\.0\\\\.0\\\\.3:": http-proxy`,
      "proxies:",
      `  http-proxy: ${tinyproxy.url}`,
      `  unused-ssh: ssh://nobody@127.0.0.1:1`,
      "",
    ].join("\n"));
    const run = await crawl([`${site.origin}/`, `${direct.origin}/`], ["--proxyServerConfig", config]);
    expect(run.result.code, run.result.stderr.slice(-2000)).toBe(0);
    expectEveryKind(run.seen);
    expectEveryKind(run.seenDirect);
    expect(new Set(run.seen.map((r) => r.peer))).toEqual(new Set(["tinyproxy"]));
    expect(run.seenDirect.filter((r) => r.peer === "tinyproxy")).toEqual([]);
    expect(run.urls).toEqual(expect.arrayContaining([...baseline.urls, `${direct.origin}/`, `${direct.origin}/from-sitemap.html`]));
    console.log(`proxyServerConfig crawl: ${run.ms} ms`);
  }, 150_000);

  // Through an HTTP proxy (Chromium and the crawler's fetches straight to it) and a SOCKS5 one with
  // credentials (Chromium through the crawler's relay, the crawler's fetches through fetch-socks).
  it.each(["tinyproxy", "microsocks"] as const)("a name this machine cannot resolve is left to the proxy (%s; no DNS here: CRAWLER_TEST_NO_DNS); a literal loopback address is still refused", async (program) => {
    const proxy = program === "tinyproxy" ? tinyproxy : socks;
    // In scope (--scopeType any), so that only the address policy keeps the crawl from the literal address.
    const literal = `http://${NAMED_HOST}:${named.port}`;
    named.homeExtras.splice(0, named.homeExtras.length, `<a href="${literal}/by-address.html">by address</a><img src="${literal}/by-address.png">`);
    const collection = `proxy-named-${program}`;
    const before = named.requests.length;
    const logBefore = proxy.log().length;
    const started = Date.now();
    const result = await runCli("crawl", ["--url", `${named.origin}/`, "--cwd", dir, "--collection", collection, ...CRAWL_FLAGS, "--scopeType", "any", "--proxyServer", proxy.url], { env: { ...ENV, CRAWLER_TEST_NO_DNS: "1" }, timeoutMs: 120_000 });
    const ms = Date.now() - started;
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const seen = named.requests.slice(before);
    expectEveryKind(seen);
    expect(new Set(seen.map((r) => r.peer))).toEqual(new Set([program]));
    const log = proxy.log().slice(logBefore);
    if (program === "tinyproxy") {
      // robots.txt and the sitemap (the crawler's own fetches) went through the proxy by name too.
      for (const path of ["/robots.txt", "/sitemap.xml", "/", "/clip.mp4"]) expect(log, path).toContain(`: GET ${named.origin}${path} HTTP/1.1`);
    } else {
      // A SOCKS proxy sees connections: every one to the site, asked for by name (resolved there).
      expect(new Set([...log.matchAll(/connected to (\S+)/g)].map((m) => m[1]))).toEqual(new Set([`${NAMED_NAME}:${named.port}`]));
    }
    expect(archivedUrls(collection)).toEqual(["/", "/clip.mp4", "/from-sitemap.html", "/img.png", "/page2.html", "/style.css"].map((path) => `${named.origin}${path}`));
    expect(listedPaths(join(dir, "collections", collection))).toEqual(["/", "/from-sitemap.html", "/page2.html"]);
    // The literal address is checked here: loopback, which no seed is on. Neither the link nor the image reached the site.
    expect(seen.filter((r) => r.path.startsWith("/by-address"))).toEqual([]);
    const refusals = logLines(result.stderr).filter((l) => l.message.startsWith("page not crawled: its address") || l.message.startsWith("request blocked"));
    expect(refusals.map((l) => [l.context, l.details.url, l.details.reason])).toEqual([
      ["capture", `${literal}/by-address.png`, `${NAMED_HOST}, a loopback address`],
      ["scope", `${literal}/by-address.html`, `${NAMED_HOST}, a loopback address`],
    ]);
    expect(result.stderr).not.toContain("does not resolve");
    console.log(`named-through-the-proxy crawl (${program}): ${ms} ms, ${seen.length} requests`);
  }, 150_000);

  it("an ssh tunnel that dies is started again on the same port", async () => {
    const proxy = parseProxyUrl(sshd.url, "proxyServer", { privateKeyFile: sshd.privateKeyFile, knownHostsFile: sshd.knownHostsFile });
    const tunnel = await openSshTunnel(proxy);
    try {
      const port = Number(new URL(tunnel.socksUrl).port);
      const owner = () => /pid=(\d+)/.exec(execFileSync("ss", ["-Htlnp", "sport", "=", `:${port}`], { encoding: "utf8" }))?.[1];
      const first = owner();
      expect(first).toBeDefined();
      process.kill(Number(first), "SIGKILL");
      const open = () => new Promise<boolean>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        socket.once("connect", () => (socket.destroy(), resolve(true)));
        socket.once("error", () => resolve(false));
      });
      const deadline = Date.now() + 20_000;
      while (!((await open()) && owner() && owner() !== first) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(owner()).toBeDefined();
      expect(owner()).not.toBe(first);
    } finally {
      tunnel.close();
    }
  }, 60_000);

  // The SOCKS5 proxy's crawl is one interrupted and resumed: its two runs together make every kind of request.
  it("a SOCKS5 proxy with credentials (microsocks), an interrupted crawl resumed: every request of both runs goes through it, and together they archive what one crawl does", async () => {
    const collection = "proxy-resumed";
    const args = ["--url", `${site.origin}/`, "--cwd", dir, "--collection", collection, ...CRAWL_FLAGS, "--workers", "1", "--proxyServer", socks.url];
    const before = site.requests.length;
    const logBefore = socks.log().length;
    // Run 1: interrupted (SIGINT) once its first page is crawled.
    const first = await crawlInterruptedAfterFirstPage(args, ENV);
    expect(first.code, first.stderr.slice(-2000)).toBe(11);
    expect(first.stderr).not.toContain(PASSWORD);
    const firstSeen = site.requests.slice(before);
    expect(firstSeen.filter((r) => r.path === "/page2.html" || r.path === "/from-sitemap.html").length, "the interrupted run left pages to the second").toBeLessThan(2);
    // Run 2: the same command goes on with the rest.
    const second = await crawl([`${site.origin}/`], ["--workers", "1", "--proxyServer", socks.url], collection);
    expect(second.result.code, second.result.stderr.slice(-2000)).toBe(0);
    expect(second.seen.filter((r) => r.path === "/page2.html" || r.path === "/from-sitemap.html").length, "the second run crawled what was left").toBeGreaterThan(0);
    const seen = site.requests.slice(before);
    expectEveryKind(seen);
    expect(new Set(seen.map((r) => r.peer))).toEqual(new Set(["microsocks"]));
    // A SOCKS proxy sees connections, not requests: it connected to the site and nowhere else.
    const targets = [...socks.log().slice(logBefore).matchAll(/connected to (\S+)/g)].map((m) => m[1]);
    expect(targets.length).toBeGreaterThan(0);
    expect(new Set(targets)).toEqual(new Set([`${PROXIED_HOST}:${site.port}`]));
    expect(second.urls).toEqual(baseline.urls);
  }, 200_000);

  // The HTTP proxy's crawl is one of two processes: every request of both goes through it.
  it("an HTTP proxy with credentials (tinyproxy): every request of several processes of one crawl goes through it, each one in its log; then a --refresh run (conditional requests) too", async () => {
    const redis: TestRedis = await startTestRedis();
    try {
      const shared = ["--crawlId", "shared", "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--generateWACZ", "--proxyServer", tinyproxy.url];
      const before = site.requests.length;
      const logBefore = tinyproxy.log().length;
      const [a, b] = await Promise.all([crawl([`${site.origin}/`], shared, "shared"), crawl([`${site.origin}/`], shared, "shared")]);
      for (const run of [a, b]) expect(run.result.code, run.result.stderr.slice(-2000)).toBe(0);
      const seen = site.requests.slice(before);
      expectEveryKind(seen);
      expect(new Set(seen.map((r) => r.peer))).toEqual(new Set(["tinyproxy"]));
      const log = tinyproxy.log().slice(logBefore);
      for (const request of seen) expect(log, `${request.method} ${request.path}`).toContain(`: ${request.method} ${site.origin}${request.path} HTTP/1.1`);
      // Read once both processes ended (each crawl() read the collection when its own process ended).
      expect(archivedUrls("shared")).toEqual(baseline.urls);
      expect(readdirSync(join(dir, "collections", "shared")).filter((f) => f.endsWith(".wacz")).length).toBeGreaterThan(0);

      const refresh = await crawl([`${site.origin}/`], ["--redisDedupeUrl", redis.url, "--refresh", "--proxyServer", tinyproxy.url]);
      expect(refresh.result.code, refresh.result.stderr.slice(-2000)).toBe(0);
      expect(refresh.seen.filter((r) => r.conditional).map((r) => r.path)).toContain("/");
      expect(new Set(refresh.seen.map((r) => r.peer))).toEqual(new Set(["tinyproxy"]));
      // The 304 through the proxy is archived: a revisit of the page.
      expect(refresh.urls).toContain(`${site.origin}/`);
    } finally {
      await redis.stop();
    }
  }, 200_000);

  it("a proxy that cannot be reached, or refuses the credentials, stops the crawl at the start: exit 21, one line", async () => {
    const closed = await closedPort();
    // Each run mostly starts node: the three at once (each in a collection of its own), then the next three.
    await Promise.all([`http://127.0.0.1:${closed}`, `socks5://u:p@127.0.0.1:${closed}`, `ssh://root@127.0.0.1:${closed}`].map(async (proxy) => {
      const started = Date.now();
      const result = await runCli("crawl", ["--url", `${site.origin}/`, "--cwd", dir, "--collection", `unreachable-${proxy.split(":")[0]}`, "--proxyServer", proxy], { env: ENV, timeoutMs: 60_000 });
      const ms = Date.now() - started;
      expect(result.code, result.stderr).toBe(21);
      const lines = result.stderr.split("\n").filter((l) => l.startsWith("crawl: "));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^crawl: proxy \S+ cannot be reached: /);
      expect(lines[0]).not.toContain(":p@");
      // Node's start included (slow on a loaded CI machine): the check itself is one refused connection.
      expect(ms).toBeLessThan(15_000);
      console.log(`unreachable ${proxy.split(":")[0]} proxy: exit 21 in ${ms} ms`);
    }));
    // Credentials the proxy refuses: tried once at the start (a HEAD of the seed host's robots.txt through it).
    const refused = Promise.all([tinyproxy.url, socks.url].map(async (proxy) => {
      const wrong = proxy.replace(`:${PASSWORD}@`, ":wrong-password@");
      const result = await runCli("crawl", ["--url", `${site.origin}/`, "--cwd", dir, "--collection", `refused-${proxy.split(":")[0]}`, "--proxyServer", wrong], { env: ENV, timeoutMs: 60_000 });
      expect(result.code, result.stderr).toBe(21);
      const lines = result.stderr.split("\n").filter((l) => l.startsWith("crawl: "));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^crawl: proxy \S+ refused the credentials given for it/);
      expect(lines[0]).not.toContain("wrong-password");
    }));
    // browsertrix-crawler 0.x's variables too.
    const [result] = await Promise.all([runCli("crawl", ["--url", `${site.origin}/`, "--cwd", dir, "--collection", "unreachable-env"], { env: { ...ENV, PROXY_HOST: "127.0.0.1", PROXY_PORT: String(closed) } }), refused]);
    expect(result.code, result.stderr).toBe(21);
  }, 120_000);

  it("a seed the proxy cannot connect to fails the crawl with --failOnFailedSeed: exit 21 (the proxy's failure), not 1", async () => {
    const closed = await closedPort();
    const seed = `http://${PROXIED_HOST}:${closed}/`;
    const args = ["--url", seed, "--cwd", dir, "--proxyServer", socks.url, "--behaviors", "", "--maxPageRetries", "0"];
    // The run without the flag (the last check) at the same time: both mostly wait on the failing seed.
    const [failing, plain] = await Promise.all([
      runCli("crawl", [...args, "--collection", "seed-via-proxy", "--failOnFailedSeed"], { env: ENV, timeoutMs: 90_000 }),
      runCli("crawl", [...args, "--collection", "seed-via-proxy-plain"], { env: ENV, timeoutMs: 90_000 }),
    ]);
    expect(failing.code, failing.stderr.slice(-2000)).toBe(21);
    const error = logLines(failing.stderr).find((l) => l.logLevel === "error" && l.message.includes("--failOnFailedSeed"));
    expect(error?.message).toContain(`seed ${seed} failed: `);
    // Chromium reaches a SOCKS proxy with credentials through our relay, which answers its failure with a 59x
    // status: that answer is not the site's, so nothing is archived and the page fails as at the proxy.
    expect(error?.message).toContain("net::ERR_PROXY_CONNECTION_FAILED");
    const archive = join(dir, "collections", "seed-via-proxy", "archive");
    const stored = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f))).filter((r) => r.headers.get("warc-target-uri") === seed);
    expect(stored).toEqual([]);
    // Without the flag it is an ordinary failed seed: all seeds failed, exit 9.
    expect(plain.code, plain.stderr.slice(-2000)).toBe(9);
    expect(recordsOf("seed-via-proxy-plain").filter((r) => r.headers.get("warc-target-uri") === seed)).toEqual([]);
  }, 200_000);
});
