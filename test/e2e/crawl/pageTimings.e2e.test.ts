/**
 * Where a page's time goes: each page's debug line "page timings" names the phases it went through (and,
 * with behaviors, each behavior of the library that ran), which the crawl benchmark sums. The load wait
 * before behaviors only lets requests in flight end, and what the page fetches a moment later is still
 * captured.
 */
import { createServer, type Server } from "node:http";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>`;
// Short: fits the viewport. Its script fetches a moment after the load, and again a moment after that.
const SHORT_PAGE = `<!doctype html><html><head><title>short</title><link rel="icon" href="data:,"></head><body>
<img src="/img/short.svg" srcset="/img/short.svg 1x, /img/short-2x.svg 2x"><a href="/tall.html">tall</a><script>
addEventListener("load", () => setTimeout(() => fetch("/late.json").then(() => setTimeout(() => fetch("/later.json"), 100)), 100));
</script></body></html>`;
const TALL_PAGE = `<!doctype html><html><head><title>tall</title><link rel="icon" href="data:,"></head><body>
<img src="/img/tall.svg" srcset="/img/tall.svg 1x, /img/tall-2x.svg 2x"><div style="height:5000px">tall</div></body></html>`;

let server: Server;
let base: string;
let cwd: string;
let withBehaviors: CliResult;
let withoutBehaviors: CliResult;

function crawl(name: string, args: string[]): Promise<CliResult> {
  return runCli("crawl", ["--url", `${base}/short.html`, "--collection", name, "--cwd", cwd, "--logLevel", "debug", "--context", "page", "--netIdleWait", "3", ...args], { timeoutMs: 200_000 });
}

interface Timings {
  url: string;
  ms: Record<string, number>;
  behaviors?: Record<string, number>;
}

function timingsOf(result: CliResult): Map<string, Timings> {
  const lines = logLines(result.stderr).filter((l) => l.message === "page timings");
  return new Map(lines.map((l) => [(l.details as unknown as Timings).url.slice(base.length), l.details as unknown as Timings]));
}

function capturedPaths(name: string): string[] {
  const archive = join(cwd, "collections", name, "archive");
  return [...new Set(readdirSync(archive)
    .flatMap((f) => readWarcRecords(join(archive, f)))
    .filter((r) => r.headers.get("warc-type") === "response")
    .map((r) => (r.headers.get("warc-target-uri") ?? "").slice(base.length)))].sort();
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const send = (type: string, body: string) => res.writeHead(200, { "Content-Type": type }).end(body);
    if (req.url === "/short.html") return send("text/html", SHORT_PAGE);
    if (req.url === "/tall.html") return send("text/html", TALL_PAGE);
    if (req.url?.startsWith("/img/")) return send("image/svg+xml", SVG);
    if (req.url === "/late.json" || req.url === "/later.json") return send("application/json", "{}");
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  cwd = mkdtempSync(join(tmpdir(), "page-timings-e2e-"));
  withBehaviors = await crawl("on", []);
  withoutBehaviors = await crawl("off", ["--behaviors", ""]);
}, 420_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("page timings", () => {
  it("with behaviors: each page's phases, and the library's behaviors that ran", () => {
    expect(withBehaviors.code, withBehaviors.stderr.slice(-2000)).toBe(0);
    const timings = timingsOf(withBehaviors);
    expect([...timings.keys()].sort()).toEqual(["/short.html", "/tall.html"]);
    for (const page of timings.values()) {
      expect(Object.keys(page.ms).sort()).toEqual(["behaviors", "drain", "extracts", "links", "load", "netIdleAfterBehaviors", "netIdleAfterLoad", "total"]);
      for (const ms of Object.values(page.ms)) expect(Number.isInteger(ms) && ms >= 0).toBe(true);
    }
    expect(Object.keys(timings.get("/short.html")!.behaviors ?? {}).sort()).toEqual(["AutofetchSweep", "Autofetcher", "Autoplay", "Autoscroll"]);
    expect(Object.keys(timings.get("/tall.html")!.behaviors ?? {}).sort()).toEqual(["AutofetchSweep", "Autofetcher", "Autoplay", "Autoscroll"]);
  });

  it("with behaviors: the srcset candidates and what the page fetched after its load are captured", () => {
    expect(capturedPaths("on")).toEqual(["/img/short-2x.svg", "/img/short.svg", "/img/tall-2x.svg", "/img/tall.svg", "/late.json", "/later.json", "/short.html", "/tall.html"]);
  });

  it("without behaviors: no behavior phases; what the page fetched after its load is captured", () => {
    expect(withoutBehaviors.code, withoutBehaviors.stderr.slice(-2000)).toBe(0);
    const timings = timingsOf(withoutBehaviors);
    expect([...timings.keys()].sort()).toEqual(["/short.html", "/tall.html"]);
    for (const page of timings.values()) {
      expect(Object.keys(page.ms).sort()).toEqual(["drain", "extracts", "links", "load", "netIdleAfterLoad", "total"]);
      expect(page.behaviors).toBeUndefined();
    }
    expect(capturedPaths("off")).toEqual(["/img/short.svg", "/img/tall.svg", "/late.json", "/later.json", "/short.html", "/tall.html"]);
  });
});
