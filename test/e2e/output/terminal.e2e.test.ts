import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { SEED_PATH, SITE_PAGES } from "../../../fixtures/site-manifest.js";
import { logLines, runCli } from "../../helpers/cli.js";
import { closedPort } from "../../helpers/closedPort.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Run the built crawler with its stdout and stderr on a pseudo-terminal (util-linux `script`); returns what the terminal showed. */
function runOnTerminal(args: string[]): Promise<{ code: number | null; screen: string }> {
  const command = ["node", "dist/src/cli/crawl.js", ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let screen = "";
    child.stdout.on("data", (d: Buffer) => (screen += d.toString()));
    child.stderr.on("data", (d: Buffer) => (screen += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

/** The terminal's text lines: escape sequences removed, split where the cursor goes back to a line start. */
function screenLines(screen: string): string[] {
  return screen
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "\n")
    .split(/\r\n|\r|\n/)
    .map((l) => l.trim())
    .filter(Boolean);
}

const BAR = /^[█░]{20} (\d+)\/(\d+) pages \| (\d+) done, (\d+) in progress, (\d+) queued, (\d+) failed( \(\d+ failed attempts\))? \| [\d.]+ [KMG]?B \| [\d.]+ pages\/min \| \d+:\d\d$/;

let site: FixtureServer;
let cwd: string;
let deadUrl: string;
beforeAll(async () => {
  site = await startFixtureServer();
  cwd = mkdtempSync(join(tmpdir(), "crawl-tty-"));
  deadUrl = `http://127.0.0.1:${await closedPort()}/`;
});
afterAll(async () => {
  await site?.close();
  rmSync(cwd, { recursive: true, force: true });
});

function logFileLines(collection: string) {
  const logs = join(cwd, "collections", collection, "logs");
  return readdirSync(logs).flatMap((f) => readFileSync(join(logs, f), "utf8").split("\n").filter(Boolean)).map((l) => JSON.parse(l) as { logLevel: string; message: string; details: Record<string, unknown> });
}

describe("on a terminal", () => {
  it("shows a progress bar and readable warnings, not JSON; the log file holds the JSON", async () => {
    const { code, screen } = await runOnTerminal([
      "--url", site.url + SEED_PATH, "--url", deadUrl, "--maxPageRetries", "1",
      "--cwd", cwd, "--collection", "tty", "--generateWACZ", "--workers", "2",
    ]);
    const lines = screenLines(screen);
    expect(code, screen.slice(-3000)).toBe(0);
    expect(lines.filter((l) => l.startsWith("{") || l.includes('"logLevel"'))).toEqual([]);

    const bars = lines.filter((l) => BAR.test(l));
    expect(bars.length, lines.join("\n")).toBeGreaterThan(0);
    // Its last state counts every page of the site and the dead seed.
    const last = BAR.exec(bars[bars.length - 1])!;
    expect(Number(last[2])).toBeLessThanOrEqual(SITE_PAGES.length + 1);

    expect(lines).toContain(`warn  page failed, will retry  ${deadUrl} (net::ERR_CONNECTION_REFUSED at ${deadUrl})`);
    expect(lines).toContain(`warn  page failed  ${deadUrl} (net::ERR_CONNECTION_REFUSED at ${deadUrl})`);
    expect(lines).toContain(`info  crawl started  ${site.url + SEED_PATH} ${deadUrl}`);
    expect(lines).toContain(`info  WACZ written  ${join(cwd, "collections", "tty", "tty.wacz")}`);
    expect(lines.find((l) => l.startsWith("info  crawl done"))).toMatch(new RegExp(`^info  crawl done  ${SITE_PAGES.length} pages, 1 failed, [\\d.]+ [KMG]?B in \\d+:\\d\\d$`));
    // Every other line is a readable warning; routine info lines ("page crawled"...) stay off the terminal.
    const info = lines.filter((l) => !BAR.test(l) && !/^(warn |error) /.test(l));
    expect(info.map((l) => l.split("  ").slice(0, 2).join("  "))).toEqual(["info  crawl started", "info  WACZ written", "info  crawl committed to the dedupe index", "info  crawl done"]);

    const logged = logFileLines("tty");
    expect(logged.filter((l) => l.message.startsWith("page crawled")).length).toBe(SITE_PAGES.length);
    expect(logged.filter((l) => l.logLevel === "warn" && l.message === "page failed, will retry").map((l) => l.details.url)).toContain(deadUrl);
    expect(logged.some((l) => l.message === "crawl done")).toBe(true);
  }, 240_000);

  it("--logging stderr-json keeps JSON lines on the terminal, without a bar", async () => {
    const { code, screen } = await runOnTerminal(["--url", `${site.url}/site/gallery.html`, "--scopeType", "page", "--logging", "stderr-json", "--cwd", cwd, "--collection", "ttyjson"]);
    expect(code, screen.slice(-3000)).toBe(0);
    const lines = screen.split(/\r?\n/).filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.map((l) => (JSON.parse(l) as { message: string }).message)).toContain("page crawled");
    expect(screen).not.toMatch(/pages \|/);
  }, 240_000);
});

describe("without a terminal", () => {
  it("stderr is JSON lines, with no bar and no readable lines", async () => {
    const result = await runCli("crawl", ["--url", `${site.url}/site/gallery.html`, "--url", deadUrl, "--scopeType", "page", "--maxPageRetries", "0", "--cwd", cwd, "--collection", "notty"]);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const lines = result.stderr.split("\n").filter(Boolean);
    expect(lines.length).toBe(logLines(result.stderr).length);
    expect(logLines(result.stderr).find((l) => l.message === "page failed")?.details).toMatchObject({ url: deadUrl });
    expect(result.stderr).not.toMatch(/pages \||\x1b\[/);
  }, 240_000);
});
