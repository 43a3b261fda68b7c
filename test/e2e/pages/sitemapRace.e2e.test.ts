// A sitemap read racing the last worker: with --workers 1 --useSitemap and a sitemap slower to serve than
// the seed page, the only worker finds the queue empty while the sitemap is still being read. The crawl must
// wait for the reading and crawl its pages, not end with them queued.
import { createServer } from "node:http";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback, type LoopbackListener } from "../../../fixtures/loopback.js";
import { logLines, NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

const SITEMAP_DELAY_MS = 3000;
const SITEMAP_PAGES = ["/listed/a.html", "/listed/b.html", "/listed/c.html"];

let site: LoopbackListener;
let cwd: string;
const requests: string[] = [];

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "sitemap-race-"));
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    requests.push(path);
    if (path === "/sitemap.xml") {
      const body = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n` +
        SITEMAP_PAGES.map((p) => `  <url><loc>${site.url}${p}</loc></url>\n`).join("") + "</urlset>\n";
      setTimeout(() => res.writeHead(200, { "content-type": "application/xml" }).end(body), SITEMAP_DELAY_MS);
      return;
    }
    if (path === "/" || SITEMAP_PAGES.includes(path)) {
      // The seed links to nothing: the sitemap is the only way to its other pages.
      res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><html><head><title>${path}</title></head><body><h1>${path}</h1></body></html>`);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  });
  site = await listenOnLoopback(server);
});

afterAll(async () => {
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe("--useSitemap with one worker and a slow sitemap", () => {
  it("crawls every page the sitemap lists: the crawl is not drained while the sitemap is being read", async () => {
    const statsFile = join(cwd, "stats.json");
    const result = await runCli("crawl", [
      "--url", `${site.url}/`, "--collection", "race", "--cwd", cwd, "--workers", "1", "--useSitemap", "--generateWACZ",
      "--netIdleWait", "1", "--statsFilename", statsFile, ...NO_BEHAVIORS,
    ], {
      timeoutMs: 170_000,
      // The race is two Redis replies wide: the worker finding the queue empty, then asking whether the sitemap
      // is still being read. The test pause holds the worker between its two looks long enough for the slow
      // sitemap's reading to queue its pages and end there.
      env: { CRAWLER_TEST_PAUSE_AT: "drain-check", CRAWLER_TEST_PAUSE_MS: String(SITEMAP_DELAY_MS + 3000) },
    });
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const expected = [`${site.url}/`, ...SITEMAP_PAGES.map((p) => site.url + p)].sort();

    const stats = JSON.parse(readFileSync(statsFile, "utf8")) as Record<string, unknown>;
    expect(stats).toMatchObject({ crawled: 4, failed: 0, queued: 0, pending: 0, status: "done" });
    const read = logLines(result.stderr).find((l) => l.context === "sitemap" && l.message === "sitemaps read");
    expect(read?.details).toMatchObject({ found: 3, queued: 3 });
    expect(requests.filter((p) => p === "/sitemap.xml")).toHaveLength(1);

    const dir = join(cwd, "collections", "race");
    const wacz = await readZip(join(dir, "race.wacz"));
    const listed = ["pages/pages.jsonl", "pages/extraPages.jsonl"]
      .flatMap((f) => wacz.get(f)?.data.toString().trim().split("\n").slice(1) ?? [])
      .map((l) => (JSON.parse(l) as { url: string }).url);
    expect(listed.sort()).toEqual(expected);

    const archive = join(dir, "archive");
    const responses = readdirSync(archive)
      .flatMap((f) => readWarcRecords(join(archive, f)))
      .filter((r) => r.headers.get("warc-type") === "response")
      .map((r) => r.headers.get("warc-target-uri") ?? "");
    // The sitemap is the crawler's own fetch, not archived; each page's document once.
    expect(responses.filter((u) => !u.endsWith("/favicon.ico")).sort()).toEqual(expected);
  }, 180_000);
});
