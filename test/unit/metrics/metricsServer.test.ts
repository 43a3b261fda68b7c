// The /metrics server on its own: a port in use, Redis going away under a scrape, the bounded error kinds.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CrawlMetrics, STATE_READ_TIMEOUT_MS } from "../../../src/metrics/crawlMetrics.js";
import { FAILURE_KINDS, failureKind } from "../../../src/metrics/failureKinds.js";
import { MetricsServer } from "../../../src/metrics/metricsServer.js";
import { connectRedis } from "../../../src/redis/connect.js";
import { freePort } from "../../../src/redis/freePort.js";
import { Frontier } from "../../../src/frontier/frontier.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { runCli } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

let cwd: string;

beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "metrics-server-"));
});

afterAll(() => {
  rmSync(cwd, { recursive: true, force: true });
});

/** The `crawler_crawl_pages` gauge by state, and the read errors, from one scrape (parsed by the format's grammar). */
async function scrape(port: number): Promise<{ pages: Record<string, number>; readErrors: number; ms: number }> {
  const started = Date.now();
  const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
  expect(response.status).toBe(200);
  const families = parsePrometheusTextFormat(await response.text());
  const pages = Object.fromEntries(families.find((f) => f.name === "crawler_crawl_pages")!.metrics.map((s) => [s.labels!.state!, Number("value" in s ? s.value : NaN)]));
  const errors = families.find((f) => f.name === "crawler_state_read_errors_total")!.metrics[0]!;
  return { pages, readErrors: Number("value" in errors ? errors.value : NaN), ms: Date.now() - started };
}

describe("--metricsPort in use", () => {
  it.each([
    ["the flag", (port: number) => ({ args: ["--metricsPort", String(port)], env: {} })],
    ["METRICS_PORT", (port: number) => ({ args: [], env: { METRICS_PORT: String(port) } })],
  ])("given by %s: one clear line, exit 1, nothing written", async (_how, given) => {
    const busy = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => busy.listen(port, "127.0.0.1", resolve));
    try {
      const { args, env } = given(port);
      const run = await runCli("crawl", ["--url", "http://127.0.0.1:9/", "--cwd", cwd, "--collection", "busy", ...args], { env });
      expect(run.code).toBe(1);
      expect(run.stderr.split("\n").filter((l) => l.startsWith("crawl:"))).toEqual([`crawl: --metricsPort ${port}: cannot serve the metrics: the port is in use`]);
      expect(existsSync(join(cwd, "collections", "busy"))).toBe(false);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  }, 60_000);
});

describe("/metrics while the crawl state's Redis is away", () => {
  let redis: TestRedis;
  let client: Redis;
  let server: MetricsServer;
  let port: number;

  beforeAll(async () => {
    redis = await startTestRedis(true);
    // The crawler's own connection: commands wait (without end) for a Redis that is away.
    client = await connectRedis(redis.url, "the crawl state");
    port = await freePort();
    server = await MetricsServer.start(port, new CrawlMetrics(), "127.0.0.1");
  });

  afterAll(async () => {
    await server?.close();
    client?.disconnect();
    await redis?.stop();
  });

  it("answers within its deadline with the last counts read, counting each failed read; reads again once Redis is back", async () => {
    const state = new Frontier(client, new Membership(client, "metrics-outage", "p1"));
    for (const path of ["a", "b", "c"]) await state.enqueue({ url: `http://a.test/${path}`, depth: 0, seedId: 0, extraHops: 0 }, 0);
    await state.markDone((await state.take())!.url);
    server.metrics.readCrawlStateFrom(() => state.counts());

    const before = await scrape(port);
    expect(before).toMatchObject({ pages: { queued: 2, pending: 0, crawled: 1, failed: 0 }, readErrors: 0 });

    await redis.stopServer();
    // Redis away: the read waits out its deadline, the last counts are served, the failure is counted.
    const away = await scrape(port);
    expect(away).toMatchObject({ pages: { queued: 2, pending: 0, crawled: 1, failed: 0 }, readErrors: 1 });
    expect(away.ms).toBeGreaterThanOrEqual(STATE_READ_TIMEOUT_MS - 100);
    expect(away.ms).toBeLessThan(STATE_READ_TIMEOUT_MS + 3000);
    // Scrapes at once, several at a time: still bounded (they wait on the one read under way).
    const together = await Promise.all([scrape(port), scrape(port), scrape(port)]);
    for (const answer of together) expect(answer.ms).toBeLessThan(STATE_READ_TIMEOUT_MS + 3000);
    const errors = (await scrape(port)).readErrors;
    expect(errors).toBeGreaterThanOrEqual(3);

    await redis.restartServer();
    await state.markDone((await state.take())!.url);
    const back = await scrape(port);
    expect(back).toMatchObject({ pages: { queued: 1, pending: 0, crawled: 2, failed: 0 }, readErrors: errors });
  }, 60_000);

  it("once the crawl has ended, serves its final counts without asking Redis", async () => {
    server.metrics.crawlEnded({ queued: 0, pending: 0, done: 7, failed: 2 });
    await redis.stopServer();
    try {
      const after = await scrape(port);
      expect(after.pages).toEqual({ queued: 0, pending: 0, crawled: 7, failed: 2 });
      expect(after.ms).toBeLessThan(1000);
    } finally {
      await redis.restartServer();
    }
  });
});

describe("failed page attempts by kind", () => {
  it("reads the kind from the error text, from a fixed set (no URL, host or status in the label)", () => {
    const cases: [string | null, boolean, string][] = [
      ["net::ERR_NAME_NOT_RESOLVED at http://user:pw@a.test/", false, "dns"],
      ["net::ERR_CONNECTION_REFUSED at http://127.0.0.1:9/", false, "connection_refused"],
      ["net::ERR_CONNECTION_RESET", false, "connection_reset"],
      ["net::ERR_EMPTY_RESPONSE", false, "connection_reset"],
      ["net::ERR_SOCKS_CONNECTION_FAILED", false, "connection_reset"],
      ["net::ERR_SOCKS_CONNECTION_FAILED", true, "proxy"],
      ["net::ERR_TIMED_OUT", false, "timeout"],
      ["Navigation timeout of 90000 ms exceeded", false, "timeout"],
      ["page did not finish within 180s", false, "timeout"],
      ["net::ERR_CERT_AUTHORITY_INVALID", false, "tls"],
      ["net::ERR_BLOCKED_BY_CLIENT", false, "address_refused"],
      ["invalid status: HTTP 503 (--failOnInvalidStatus)", false, "http_status"],
      ["rate limited: HTTP 429", false, "rate_limited"],
      ["logged out: redirected to the login page https://a.test/login", false, "logged_out"],
      ["the page's document could not be stored", false, "not_stored"],
      ["crawler error: boom", false, "crawler"],
      ["something else entirely", false, "other"],
      [null, false, "other"],
    ];
    expect(cases.map(([reason, proxy]) => failureKind(reason, proxy))).toEqual(cases.map(([, , kind]) => kind));
    for (const kind of FAILURE_KINDS) expect(kind).toMatch(/^[a-z_]+$/);
  });
});
