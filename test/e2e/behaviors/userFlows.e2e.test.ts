/**
 * --customBehaviors with a Chrome Recorder flow (.json), as browsertrix-crawler runs them: a crawl of a
 * loopback site whose requests happen only when the flow clicks a button and types into an input. The
 * flow runs on pages under its navigate URL only, and what it fetches is archived like any page traffic.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

let server: Server;
let site: string;
let cwd: string;

/** A page that fetches /api/secret?x=<name> when its button is clicked and /api/search?q=<typed> on input. */
function page(name: string): string {
  return `<!doctype html><html><head><title>${name}</title></head><body>
<button type="button" onclick="fetch('/api/secret?x=${name}').then(() => { const p = document.createElement('p'); p.textContent = 'Secret shown'; document.body.append(p); })">Reveal secret</button>
<label>Search <input id="q" name="q" oninput="fetch('/api/search?q=' + encodeURIComponent(this.value))"></label>
<div style="height: 3000px">(taller than the viewport: something to scroll)</div>
</body></html>`;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/flows/reveal.json") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(recordedFlow()));
    } else if (url.pathname.startsWith("/api/")) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ path: url.pathname, query: url.search }));
    } else if (url.pathname === "/app/" || url.pathname === "/other/") {
      res.writeHead(200, { "content-type": "text/html" }).end(page(url.pathname.slice(1, -1)));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  site = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cwd = mkdtempSync(join(tmpdir(), "user-flows-e2e-"));
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

/** A Recorder export as DevTools writes one: viewport, navigate, then the steps of the page. */
function recordedFlow(): object {
  return {
    title: "reveal and search",
    steps: [
      { type: "setViewport", width: 1280, height: 800, deviceScaleFactor: 1, isMobile: false, hasTouch: false, isLandscape: false },
      { type: "navigate", url: `${site}/app/`, assertedEvents: [{ type: "navigation", url: `${site}/app/`, title: "app" }] },
      // aria/ only: the button has no id or class to find it by.
      { type: "click", target: "main", selectors: [["aria/Reveal secret"]], offsetX: 10, offsetY: 5 },
      { type: "waitForElement", target: "main", selectors: [["text/Secret shown"]] },
      { type: "change", target: "main", selectors: [["#q"], ["xpath///*[@id=\"q\"]"]], value: "flow words" },
    ],
  };
}

interface Crawl {
  result: CliResult;
  /** The request targets of the site's /api/ responses archived, sorted. */
  api: string[];
}

let runs = 0;
async function crawl(args: string[], behaviors = "siteSpecific"): Promise<Crawl> {
  const collection = `c${++runs}`;
  const result = await runCli("crawl", [
    "--url", `${site}/app/`, "--url", `${site}/other/`, "--scopeType", "page", "--collection", collection, "--cwd", cwd,
    "--netIdleWait", "1", "--behaviors", behaviors, "--behaviorTimeout", "20", "--workers", "1", ...args,
  ], { timeoutMs: 60_000 });
  const archive = join(cwd, "collections", collection, "archive");
  const records = existsSync(archive) ? readdirSync(archive).filter((f) => f.includes(".warc")).flatMap((f) => readWarcRecords(join(archive, f))) : [];
  const api = records.filter((r) => r.headers.get("warc-type") === "response")
    .map((r) => new URL(r.headers.get("warc-target-uri") ?? "")).filter((u) => u.pathname.startsWith("/api/"))
    .map((u) => u.pathname + u.search).sort();
  return { result, api };
}

describe("--customBehaviors recorder flows (.json)", () => {
  it("clicks and types on the pages under the flow's navigate URL; what that fetches is archived", async () => {
    const file = join(cwd, "flow.json");
    writeFileSync(file, JSON.stringify(recordedFlow(), null, 2));
    const crawled = await crawl(["--customBehaviors", file, "--logging", "stats,behaviors,debug", "--logLevel", "debug,info,warn,error"], "autoscroll,siteSpecific");
    expect(crawled.result.code, crawled.result.stderr.slice(-3000)).toBe(0);
    // One input event per typed character; /other/ is not under the navigate URL: no flow there.
    const typed = "flow words".split("").map((_, i) => `/api/search?q=${encodeURIComponent("flow words".slice(0, i + 1))}`);
    expect(crawled.api).toEqual(["/api/secret?x=app", ...typed].sort());
    const flowLines = logLines(crawled.result.stderr).filter((l) => l.context === "behavior" && l.message.startsWith("flow behavior"));
    expect(flowLines.map((l) => [l.message, l.details.url, l.details.steps, l.details.of])).toEqual([["flow behavior finished", `${site}/app/`, 3, 3]]);
    // As in browsertrix-crawler, the flow takes the autoscroll's place on its page; the other page is scrolled.
    expect(logLines(crawled.result.stderr).filter((l) => l.message === "autoscroll ended").map((l) => l.details.url)).toEqual([`${site}/other/`]);
  }, 60_000);

  it("a flow from a URL and one in a folder; a step whose element never shows is skipped after 5 s", async () => {
    const dir = join(cwd, "flows");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "other.json"), JSON.stringify({
      title: "other",
      steps: [
        { type: "navigate", url: `${site}/other/` },
        { type: "click", selectors: [["#not-there"]] },
        { type: "click", selectors: [["text/Reveal secret"]] },
      ],
    }));
    const crawled = await crawl(["--customBehaviors", `${site}/flows/reveal.json`, "--customBehaviors", dir]);
    expect(crawled.result.code, crawled.result.stderr.slice(-3000)).toBe(0);
    const typed = "flow words".split("").map((_, i) => `/api/search?q=${encodeURIComponent("flow words".slice(0, i + 1))}`);
    expect(crawled.api).toEqual(["/api/secret?x=app", "/api/secret?x=other", ...typed].sort());
    const flowLines = logLines(crawled.result.stderr).filter((l) => l.context === "behavior" && l.message.startsWith("flow behavior"));
    expect(flowLines.map((l) => [l.message, l.details.url, l.details.steps])).toEqual([
      ["flow behavior finished", `${site}/app/`, 3],
      ["flow behavior finished", `${site}/other/`, 2],
    ]);
  }, 60_000);

  it("without the flow, nothing under /api/ is fetched", async () => {
    const crawled = await crawl([]);
    expect(crawled.result.code, crawled.result.stderr.slice(-3000)).toBe(0);
    expect(crawled.api).toEqual([]);
  }, 60_000);

  it("a flow file that is not JSON is a usage error of one line naming it", async () => {
    const file = join(cwd, "bad.json");
    writeFileSync(file, "{ \"steps\": [");
    const result = await runCli("crawl", ["--url", `${site}/app/`, "--cwd", cwd, "--customBehaviors", file]);
    expect(result.code, result.stderr).toBe(4);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`--customBehaviors ${file}: not a recorder flow: bad JSON`);
  }, 30_000);
});
