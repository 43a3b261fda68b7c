// Bytes written for a page after it was done are its seed's: two seeds crawled by one worker, /a.html (seed 0)
// fetches an HLS playlist whose three segments the server answers only after SEGMENT_DELAY_MS, past the page's
// drain deadline (shortened to DRAIN_MS with CRAWLER_TEST_DRAIN_MS), so the crawler stores them while the worker
// already crawls /b.html (seed 1). Each seed's bytes in reports/seeds.jsonl are exactly those of its records:
// the segments in seed 0's, none in seed 1's.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback, type LoopbackListener } from "../../../fixtures/loopback.js";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

const DRAIN_MS = 500;
const SEGMENT_DELAY_MS = 4500;
const SEGMENTS = ["/a/seg0.ts", "/a/seg1.ts", "/a/seg2.ts"];
const PLAYLIST = `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n${SEGMENTS.map((s) => `#EXTINF:2.0,\n${s}\n`).join("")}#EXT-X-ENDLIST\n`;
const page = (title: string, script = "") => `<!doctype html><html><head><title>${title}</title><link rel="icon" href="data:,"></head><body><p>${title}</p>${script}</body></html>`;

let site: LoopbackListener;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
/** When each segment's answer was sent (epoch ms). */
const answered = new Map<string, number>();

beforeAll(async () => {
  site = await listenOnLoopback(createServer((req, res) => {
    const url = req.url ?? "";
    if (url === "/a.html") res.writeHead(200, { "Content-Type": "text/html" }).end(page("a", `<script>fetch("/a/index.m3u8").then((r) => r.text())</script>`));
    else if (url === "/b.html") res.writeHead(200, { "Content-Type": "text/html" }).end(page("b"));
    else if (url === "/a/index.m3u8") res.writeHead(200, { "Content-Type": "application/vnd.apple.mpegurl", "Content-Length": Buffer.byteLength(PLAYLIST) }).end(PLAYLIST);
    else if (SEGMENTS.includes(url)) {
      setTimeout(() => {
        answered.set(url, Date.now());
        res.writeHead(200, { "Content-Type": "video/mp2t" }).end(`segment ${url} `.repeat(500));
      }, SEGMENT_DELAY_MS);
    } else res.writeHead(404).end();
  }));
  cwd = mkdtempSync(join(tmpdir(), "late-bytes-"));
  crawl = await runCli("crawl", [
    "--url", `${site.url}/a.html`, "--url", `${site.url}/b.html`, "--scopeType", "page", "--collection", "late", "--cwd", cwd, "--workers", "1",
    ...NO_BEHAVIORS, "--netIdleWait", "0", "--postLoadDelay", "2",
  ], { env: { CRAWLER_TEST_DRAIN_MS: String(DRAIN_MS) } });
  const archive = join(cwd, "collections", "late", "archive");
  records = readdirSync(archive).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(archive, f)));
}, 120_000);

afterAll(async () => {
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("bytes written after their page was done", () => {
  it("the segments were stored after /a.html was crawled, while /b.html was", () => {
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    const crawled = logLines(crawl.stderr).filter((l) => l.message === "page crawled");
    expect(crawled.map((l) => l.details.url)).toEqual([`${site.url}/a.html`, `${site.url}/b.html`]);
    const stored = records.filter((r) => r.headers.get("warc-type") === "response").map((r) => (r.headers.get("warc-target-uri") ?? "").slice(site.url.length));
    expect(stored.filter((p) => p.endsWith(".ts")).sort()).toEqual(SEGMENTS);
    const aDone = Date.parse(crawled[0].timestamp);
    for (const segment of SEGMENTS) expect(answered.get(segment)!).toBeGreaterThan(aDone);
  });

  it("counts them in /a.html's seed, none in /b.html's", () => {
    const lines = readFileSync(join(cwd, "collections", "late", "reports", "seeds.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { url: string; bytes: number });
    const bytesOf = (prefixes: string[]) => records.filter((r) => prefixes.some((p) => (r.headers.get("warc-target-uri") ?? "").startsWith(site.url + p))).reduce((sum, r) => sum + r.length, 0);
    expect(records.filter((r) => r.headers.get("warc-type") !== "warcinfo").every((r) => /^\/(a|b)[./]/.test((r.headers.get("warc-target-uri") ?? "").slice(site.url.length)))).toBe(true);
    expect(lines.map((l) => [l.url, l.bytes])).toEqual([
      [`${site.url}/a.html`, bytesOf(["/a.html", "/a/"])],
      [`${site.url}/b.html`, bytesOf(["/b.html"])],
    ]);
  });
});
