import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// A page whose first attempt fails after everything it loads was captured and stored: on its first visit (a
// localStorage flag) its script blocks the main thread for longer than the page's links may take to be read, so
// the attempt fails ("could not read the page's links") and the page is retried in a fresh tab. Every answer of the
// site is Cache-Control: no-store, so the browser's HTTP cache holds none of it. The retry must not fetch again what
// the first attempt stored: it is answered from the WARC records, and the page renders from them (its images
// decode, its stylesheet applies, its script runs and reads its API's JSON: the page's text says so).

/** The page's subresources: two images, a script, a stylesheet, the JSON its script fetches. */
const SUBRESOURCES = ["/img/wide.png", "/img/tall.png", "/app.js", "/style.css", "/api/data.json"];
/** Longer than the page read's deadline (page/linkExtract.ts, 10 s). */
const BUSY_MS = 13_000;

let server: Server;
let origin: string;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
const requested = new Map<string, number>();

/** A PNG of `width` x `height` grey pixels. */
function png(width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  const rows = Buffer.concat(Array.from({ length: height }, () => Buffer.concat([Buffer.from([0]), Buffer.alloc(width, 0x80)])));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", header), chunk("IDAT", deflateSync(rows)), chunk("IEND", Buffer.alloc(0))]);
}

const PAGE = `<!doctype html><html><head><title>retried</title><link rel="stylesheet" href="/style.css"></head><body>
<img id="wide" src="/img/wide.png"><img id="tall" src="/img/tall.png">
<p id="status">not rendered</p>
<script src="/app.js"></script>
</body></html>`;

const SCRIPT = `
const firstVisit = !localStorage.getItem("visited");
localStorage.setItem("visited", "1");
const data = fetch("/api/data.json").then((r) => r.json());
window.addEventListener("load", async () => {
  const json = await data;
  const size = (id) => { const img = document.getElementById(id); return img.naturalWidth + "x" + img.naturalHeight; };
  const color = getComputedStyle(document.getElementById("status")).color;
  document.getElementById("status").textContent = "rendered wide " + size("wide") + " tall " + size("tall") + " api " + json.answer + " color " + color;
  if (firstVisit) {
    const until = Date.now() + ${BUSY_MS};
    while (Date.now() < until) {}
  }
});
`;

const ANSWERS: Record<string, { type: string; body: Buffer }> = {
  "/page.html": { type: "text/html", body: Buffer.from(PAGE) },
  "/app.js": { type: "text/javascript", body: Buffer.from(SCRIPT) },
  "/style.css": { type: "text/css", body: Buffer.from("#status { color: rgb(1, 2, 3); }") },
  "/api/data.json": { type: "application/json", body: Buffer.from(JSON.stringify({ answer: 42 })) },
  "/img/wide.png": { type: "image/png", body: png(40, 10) },
  "/img/tall.png": { type: "image/png", body: png(12, 30) },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "";
    requested.set(path, (requested.get(path) ?? 0) + 1);
    const answer = ANSWERS[path];
    if (!answer) return void res.writeHead(404, { "cache-control": "no-store" }).end();
    res.writeHead(200, { "content-type": answer.type, "content-length": String(answer.body.length), "cache-control": "no-store" }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-retry-archive-"));
  crawl = await runCli("crawl", [
    "--url", `${origin}/page.html`, ...NO_BEHAVIORS, "--scopeType", "page", "--collection", "retried", "--cwd", cwd, "--text", "to-pages",
    "--netIdleWait", "1", "--pageLoadTimeout", "20", "--redisDedupeUrl", redis.url, "--logLevel", "debug", "--context", "capture,page",
  ], { timeoutMs: 110_000 });
  const archive = join(cwd, "collections", "retried", "archive");
  records = readdirSync(archive).filter((f) => /\.warc(\.gz)?$/.test(f)).flatMap((f) => readWarcRecords(join(archive, f)));
}, 120_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("a page retried after its first attempt stored what it loaded", () => {
  it("fails its first attempt after loading, and is crawled on the retry", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    const lines = logLines(crawl.stderr);
    expect(lines.filter((l) => l.message === "page failed, will retry").map((l) => [l.details.url, l.details.error])).toEqual([
      [`${origin}/page.html`, "could not read the page's links: links not read in time"],
    ]);
    expect(lines.filter((l) => l.message === "page crawled").map((l) => l.details.url)).toEqual([`${origin}/page.html`]);
  });

  it("renders on the retry from what the archive holds: images decoded, stylesheet applied, script run, its JSON read", () => {
    const pages = readFileSync(join(cwd, "collections", "retried", "pages", "pages.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>).filter((p) => p.url);
    expect(pages.map((p) => [p.url, p.status])).toEqual([[`${origin}/page.html`, 200]]);
    expect(String(pages[0]!.text)).toContain("rendered wide 40x10 tall 12x30 api 42 color rgb(1, 2, 3)");
  });

  it("fetches each of the page's files from the server once, the page's document too", () => {
    const counts = Object.fromEntries(["/page.html", ...SUBRESOURCES].map((path) => [path, requested.get(path) ?? 0]));
    expect(counts).toEqual(Object.fromEntries(["/page.html", ...SUBRESOURCES].map((path) => [path, 1])));
    const answered = logLines(crawl.stderr).filter((l) => l.message === "answered from the record an earlier attempt of the page stored: not fetched again");
    expect(answered.map((l) => new URL(String(l.details.url)).pathname).sort()).toEqual(["/page.html", ...SUBRESOURCES].sort());
  });

  it("stores each once: one response record a URL, with the server's bytes", () => {
    for (const path of ["/page.html", ...SUBRESOURCES]) {
      const stored = records.filter((r) => r.headers.get("warc-target-uri") === origin + path && ["response", "revisit"].includes(r.headers.get("warc-type") ?? ""));
      expect(stored.map((r) => r.headers.get("warc-type")), path).toEqual(["response"]);
      expect(stored[0]!.payload.equals(ANSWERS[path]!.body), path).toBe(true);
    }
  });
});
