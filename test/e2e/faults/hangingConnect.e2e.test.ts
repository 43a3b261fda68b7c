// A page whose server never completes the TCP connection (a loopback listener that accepts nothing, its queue
// full): the crawl's Chromium connects through the socket gate (fetch/socketGate.ts), whose connect deadline
// (UPSTREAM_CONNECT_TIMEOUT_MS) ends the attempt, and the page fails with the error Chromium would have named,
// net::ERR_CONNECTION_TIMED_OUT, at that deadline and well before --pageLoadTimeout.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UPSTREAM_CONNECT_TIMEOUT_MS } from "../../../src/fetch/socketGate.js";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { hangingPort } from "../../helpers/hangingPort.js";

let hanging: Awaited<ReturnType<typeof hangingPort>>;
let cwd: string;
let crawl: CliResult;

beforeAll(async () => {
  hanging = await hangingPort();
  cwd = mkdtempSync(join(tmpdir(), "hanging-connect-"));
  crawl = await runCli("crawl", [
    "--url", `http://127.0.0.1:${hanging.port}/page.html`, "--scopeType", "page", "--collection", "hang", "--cwd", cwd,
    ...NO_BEHAVIORS, "--pageLoadTimeout", "90", "--maxPageRetries", "0", "--logging", "debug",
  ], { timeoutMs: 110_000 });
}, 115_000);

afterAll(() => {
  hanging?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("a server that never completes the connection", () => {
  it("fails the page at the gate's connect deadline, saying the connection timed out", () => {
    const lines = logLines(crawl.stderr);
    const failed = lines.find((l) => l.message === "page failed");
    expect(failed, crawl.stderr.slice(-3000)).toBeDefined();
    expect(String(failed?.details.error)).toContain("net::ERR_CONNECTION_TIMED_OUT");
    // The navigation failed at the gate's deadline (the crawler then tries the page once outside the browser,
    // undici's own 10 s connect timeout, before the page fails).
    const timings = lines.find((l) => l.message === "page timings")?.details.ms as { load: number } | undefined;
    expect(timings?.load).toBeGreaterThanOrEqual(UPSTREAM_CONNECT_TIMEOUT_MS);
    expect(timings?.load).toBeLessThan(UPSTREAM_CONNECT_TIMEOUT_MS + 3_000);
    const started = lines.find((l) => l.message === "loading page");
    expect(Date.parse(failed!.timestamp) - Date.parse(started!.timestamp)).toBeLessThan(UPSTREAM_CONNECT_TIMEOUT_MS + 15_000);
  });
});
