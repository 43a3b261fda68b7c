// --metricsPort: a real crawl (real Chromium, a password-protected redis-server started here, the fixture site on
// loopback) scraped while it runs and once it is done (--waitOnDone keeps the process up), every scrape parsed as
// the Prometheus text format.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, get, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import parsePrometheusTextFormat, { type MetricFamily } from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { SEED_PATH, SITE_PAGES } from "../../../fixtures/site-manifest.js";
import { EmbeddedRedis } from "../../../src/redis/embedded.js";
import { freePort } from "../../../src/redis/freePort.js";
import { closedPort } from "../../helpers/closedPort.js";
import { NO_BEHAVIORS } from "../../helpers/cli.js";
import { processes } from "../../helpers/processes.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

const ROOT = join(import.meta.dirname, "../../..");
const REDIS_PASSWORD = "metrics-test-pw-7Qx2";

/** One scrape: the exposition as served and as parsed. */
interface Scrape {
  families: Map<string, MetricFamily>;
  text: string;
}

/** GET /metrics; null when nothing answers (not yet, or no more). */
function fetchMetrics(port: number): Promise<{ status: number; type: string; body: string } | null> {
  return new Promise((resolve) => {
    const req = get({ host: "127.0.0.1", port, path: "/metrics", timeout: 5000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), body }));
    });
    req.on("error", () => resolve(null));
    req.on("timeout", () => req.destroy());
  });
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
// A sample value as Prometheus reads it (Go's ParseFloat: Inf and NaN in any case; prom-client writes "Nan").
const NUMBER = /^[+-]?(inf|infinity|nan|(\d+\.?\d*|\.\d+)(e[+-]?\d+)?)$/i;

/** The exposition parsed by the format's grammar (a line it cannot read throws), every name and number checked too. */
function parseExposition(text: string): Map<string, MetricFamily> {
  const families = parsePrometheusTextFormat(text);
  for (const family of families) {
    expect(family.name).toMatch(NAME);
    for (const sample of family.metrics) {
      for (const name of Object.keys(sample.labels ?? {})) expect(name).toMatch(LABEL_NAME);
      // (The parser files a labelled histogram's buckets apart from its count and sum when `le` comes first, as
      // prom-client writes Node's GC histogram: each part is checked where it is.)
      const parts = "value" in sample ? [sample.value] : [sample.count, sample.sum, ...Object.values("buckets" in sample ? sample.buckets : sample.quantiles ?? {})];
      for (const value of parts.filter((v) => v !== undefined)) expect(value, `${family.name} ${JSON.stringify(sample)}`).toMatch(NUMBER);
    }
  }
  return new Map(families.map((f) => [f.name, f]));
}

/**
 * Every counter-like series of a scrape (counters, histogram counts, sums and buckets) by a key naming it: the
 * crawler's and the process's (Node's GC histogram is left out: the parser merges its kinds' buckets).
 */
function monotonicSeries(families: Map<string, MetricFamily>): Map<string, number> {
  const series = new Map<string, number>();
  for (const family of families.values()) {
    if (!/^(crawler|process)_/.test(family.name)) continue;
    for (const sample of family.metrics) {
      const key = `${family.name}${JSON.stringify(sample.labels ?? {})}`;
      if (family.type === "COUNTER" && "value" in sample) series.set(key, Number(sample.value));
      if (family.type === "HISTOGRAM" && "buckets" in sample) {
        if (sample.count !== undefined) series.set(`${key}:count`, Number(sample.count));
        if (sample.sum !== undefined) series.set(`${key}:sum`, Number(sample.sum));
        for (const [le, n] of Object.entries(sample.buckets)) series.set(`${key}:le=${le}`, Number(n));
      }
    }
  }
  return series;
}

/** The value of a family's sample whose labels include `labels` (a family without labels: its one sample). */
function valueOf(families: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name);
  expect(family, `${name} missing`).toBeDefined();
  const sample = family!.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  expect(sample, `${name}${JSON.stringify(labels)} missing`).toBeDefined();
  return Number("value" in sample! ? sample.value : sample!.count);
}

/** A host whose one page answers 429 (Retry-After: 1) the first time, then itself. */
function startRateLimitingSite(): Promise<{ server: Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    if (req.url !== "/limited.html") return void res.writeHead(404).end();
    hits += 1;
    if (hits === 1) return void res.writeHead(429, { "retry-after": "1", "content-type": "text/plain" }).end("slow down\n");
    res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>Limited</title><p>served after a 429</p>");
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    resolve({ server, url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/limited.html`, hits: () => hits });
  }));
}

let site: FixtureServer;
let limited: Awaited<ReturnType<typeof startRateLimitingSite>>;
let redis: EmbeddedRedis;
let cwd: string;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "metrics-e2e-"));
  site = await startFixtureServer();
  limited = await startRateLimitingSite();
  redis = new EmbeddedRedis({ dataDir: join(cwd, "redis"), persist: false, password: REDIS_PASSWORD });
  await redis.start();
});

afterAll(async () => {
  await site?.close();
  await new Promise((resolve) => limited?.server.close(resolve));
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("--metricsPort", () => {
  it("serves the crawl's metrics in the Prometheus text format, growing while it runs, exact once it is done", async () => {
    const port = await freePort();
    const refused = `http://127.0.0.1:${await closedPort()}/gone.html`;
    const statsFile = join(cwd, "stats.json");
    const redisUrl = redis.url;
    expect(redisUrl).toContain(REDIS_PASSWORD);
    const child = spawn(process.execPath, [
      "dist/src/cli/crawl.js", "--url", site.url + SEED_PATH, "--url", refused, "--url", limited.url,
      "--cwd", cwd, "--collection", "metrics", "--redisStoreUrl", redisUrl, "--workers", "1", ...NO_BEHAVIORS,
      "--maxPageRetries", "1", "--rateLimitTimeout", "1",
      "--metricsPort", String(port), "--waitOnDone", "--statsFilename", statsFile,
    ], { cwd: ROOT, env: { ...process.env, METRICS_PORT: "1" } });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    let running = true;
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => ((running = false), resolve(code))));

    const during: Scrape[] = [];
    let killedBrowser = false;
    const deadline = Date.now() + 90_000;
    // Scrape until the stats file says the crawl is done (--waitOnDone then keeps the process and its server up).
    while (running && !existsSync(statsFile) && Date.now() < deadline) {
      const answer = await fetchMetrics(port);
      if (answer) {
        expect(answer.status).toBe(200);
        expect(answer.type).toMatch(/^text\/plain; version=0\.0\.4/);
        const families = parseExposition(answer.body);
        during.push({ families, text: answer.body });
        // Mid-crawl, once the refused seed has used up its attempts (so that the kill cannot change how its
        // attempts fail), Chromium is killed: the crawl starts another one and goes on.
        const crawled = families.has("crawler_pages_crawled_total") ? valueOf(families, "crawler_pages_crawled_total") : 0;
        const refusedTries = families.has("crawler_page_fetch_errors_total") ? valueOf(families, "crawler_page_fetch_errors_total", { kind: "connection_refused" }) : 0;
        if (!killedBrowser && refusedTries === 2 && crawled >= 3 && crawled <= SITE_PAGES.length - 4) killedBrowser = killChromiumOf(child.pid!);
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(existsSync(statsFile), stderr.slice(-3000)).toBe(true);
    const last = await fetchMetrics(port);
    expect(last?.status).toBe(200);
    const end: Scrape = { families: parseExposition(last!.body), text: last!.body };
    child.kill("SIGTERM");
    expect(await exited, stderr.slice(-3000)).toBe(0);
    // The server is gone with the process.
    expect(await fetchMetrics(port)).toBeNull();

    const stats = JSON.parse(readFileSync(statsFile, "utf8"));
    const pages = SITE_PAGES.length + 1; // the fixture site and the page after the 429
    expect(stats).toMatchObject({ crawled: pages, failed: 1, queued: 0, pending: 0 });
    expect(killedBrowser).toBe(true);

    // Scraped while it ran: pages crawled seen at two values at least between none and all of them.
    const scrapes = [...during, end];
    const crawledSeen = scrapes.map((s) => (s.families.has("crawler_pages_crawled_total") ? valueOf(s.families, "crawler_pages_crawled_total") : 0));
    expect(new Set(crawledSeen.filter((n) => n > 0 && n < pages)).size).toBeGreaterThanOrEqual(2);
    // Counters and histograms never go down from one scrape to the next.
    for (let i = 1; i < scrapes.length; i++) {
      const before = monotonicSeries(scrapes[i - 1]!.families);
      for (const [key, value] of monotonicSeries(scrapes[i]!.families)) {
        if (before.has(key)) expect(value, `${key} went down`).toBeGreaterThanOrEqual(before.get(key)!);
      }
    }

    // Every family, of its type.
    const types = Object.fromEntries([...end.families.values()].map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      crawler_info: "GAUGE",
      crawler_crawl_pages: "GAUGE",
      crawler_pages_crawled_total: "COUNTER",
      crawler_pages_failed_total: "COUNTER",
      crawler_page_fetch_errors_total: "COUNTER",
      crawler_page_duration_seconds: "HISTOGRAM",
      crawler_warc_written_bytes_total: "COUNTER",
      crawler_revisit_records_total: "COUNTER",
      crawler_dedupe_conserved_bytes_total: "COUNTER",
      crawler_rate_limited_waits_total: "COUNTER",
      crawler_browser_restarts_total: "COUNTER",
      crawler_state_read_errors_total: "COUNTER",
      process_cpu_seconds_total: "COUNTER",
      process_resident_memory_bytes: "GAUGE",
    });

    // The last scrape: exact counts.
    const f = end.families;
    expect(valueOf(f, "crawler_pages_crawled_total", { capture: "browser" })).toBe(pages);
    expect(valueOf(f, "crawler_pages_crawled_total", { capture: "static" })).toBe(0);
    expect(valueOf(f, "crawler_page_duration_seconds")).toBe(pages); // the histogram's count
    expect(valueOf(f, "crawler_crawl_pages", { state: "crawled" })).toBe(pages);
    expect(valueOf(f, "crawler_crawl_pages", { state: "failed" })).toBe(1);
    expect(valueOf(f, "crawler_crawl_pages", { state: "queued" })).toBe(0);
    expect(valueOf(f, "crawler_crawl_pages", { state: "pending" })).toBe(0);
    expect(valueOf(f, "crawler_pages_failed_total")).toBe(1);
    // The refused seed: tried twice (--maxPageRetries 1), both refused.
    expect(valueOf(f, "crawler_page_fetch_errors_total", { kind: "connection_refused" })).toBe(2);
    expect(valueOf(f, "crawler_page_fetch_errors_total", { kind: "rate_limited" })).toBe(1);
    expect(valueOf(f, "crawler_rate_limited_waits_total")).toBe(1);
    // Served again after the 429 (a third time should the browser kill have cut that load short).
    expect(limited.hits()).toBeGreaterThanOrEqual(2);
    expect(valueOf(f, "crawler_browser_restarts_total")).toBe(1);
    expect(valueOf(f, "crawler_state_read_errors_total")).toBe(0);
    expect(valueOf(f, "crawler_info", { version: JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version })).toBe(1);

    // Bytes written: the WARC files' sizes, byte for byte; revisits and what they saved, record for record.
    const archive = join(cwd, "collections", "metrics", "archive");
    const warcs = readdirSync(archive).filter((name) => name.endsWith(".warc.gz")).map((name) => join(archive, name));
    expect(valueOf(f, "crawler_warc_written_bytes_total")).toBe(warcs.reduce((sum, path) => sum + statSync(path).size, 0));
    const records = warcs.flatMap((path) => readWarcRecords(path));
    const revisits = records.filter((r) => r.headers.get("warc-type") === "revisit");
    expect(revisits.length).toBeGreaterThan(0); // the site serves one image under two URLs
    expect(valueOf(f, "crawler_revisit_records_total")).toBe(revisits.length);
    const responses = new Map(records.filter((r) => r.headers.get("warc-type") === "response").map((r) => [r.headers.get("warc-payload-digest"), r]));
    const conserved = revisits.reduce((sum, r) => sum + responses.get(r.headers.get("warc-payload-digest"))!.length - r.length, 0);
    expect(conserved).toBeGreaterThan(0);
    expect(valueOf(f, "crawler_dedupe_conserved_bytes_total")).toBe(conserved);

    // Labels are bounded and hold no URL, credentials or the Redis password; nor does anything else served.
    for (const scrape of scrapes) {
      expect(scrape.text).not.toContain(REDIS_PASSWORD);
      for (const family of scrape.families.values()) {
        for (const sample of family.metrics) {
          for (const value of Object.values(sample.labels ?? {})) {
            expect(value).not.toContain("://");
            expect(value).not.toContain("@");
          }
        }
      }
    }
    expect(new Set(f.get("crawler_page_fetch_errors_total")!.metrics.map((s) => s.labels?.kind)).size).toBe(f.get("crawler_page_fetch_errors_total")!.metrics.length);
  }, 120_000);
});

/**
 * SIGKILL the crawl's Chromium: its main process, the crawler's own child (its launch script execs Chromium in
 * the same pid; zygotes, renderers and the crash handler are that process's children); whether one was found.
 */
function killChromiumOf(crawlerPid: number): boolean {
  const browser = [...processes()].find(([, p]) => p.parent === crawlerPid && /chrom/i.test(p.line) && !p.line.includes("--type="));
  if (!browser) return false;
  process.kill(browser[0], "SIGKILL");
  return true;
}
