import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { png } from "../../helpers/loginSite.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// The behaviors' autofetch asks for every srcset candidate with a no-cors fetch() and never reads the response
// (it means to abort it, but its abort is never wired to the fetch). Chromium tells no end of a load whose body the
// page holds unread: neither Network.loadingFinished nor loadingFailed. The capture read the body whole before
// letting the response on, so nothing is to be learned from that end: the page's end must not wait for it.
// Every answer is no-store with a Content-Length, so the autofetch's fetches go to the server and pause here.
const IMAGES = ["/img/d1-1x.png", "/img/d1-2x.png", "/img/plain.png"];
const PAGE = "/page.html";
/** Only the autofetch asks for it: a screen of one device pixel a CSS pixel picks the 1x candidate. */
const AUTOFETCHED_ONLY = "/img/d1-2x.png";
/**
 * A page whose body of no declared length the connection cuts off: only the browser's report of its load's failure
 * tells the body is not whole, and the capture still learns it (the page reads this body, so the end is told).
 */
const CUT_OFF = "/cut-chunked.html";
const CUT_OFF_SENT = `<!doctype html><title>cut</title><p>${"x".repeat(5000)}`;

let server: Server;
let url: string;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
const requests: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "";
    requests.push(path);
    if (path === PAGE) {
      const html = `<!doctype html><title>srcset</title>
<img src="/img/d1-1x.png" srcset="/img/d1-1x.png 1x, /img/d1-2x.png 2x" width="20" height="20">
<img src="/img/plain.png" width="20" height="20">`;
      res.writeHead(200, { "content-type": "text/html", "content-length": String(Buffer.byteLength(html)), "cache-control": "no-store" }).end(html);
    } else if (path === CUT_OFF) {
      res.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" });
      res.write(CUT_OFF_SENT, () => setTimeout(() => res.socket?.destroy(), 200));
    } else if (IMAGES.includes(path)) {
      const body = png(path);
      res.writeHead(200, { "content-type": "image/png", "content-length": String(body.length), "cache-control": "no-store" }).end(body);
    } else {
      res.writeHead(404, { "content-length": "0", "cache-control": "no-store" }).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-unread-fetch-"));
  crawl = await runCli("crawl", ["--url", url + PAGE, "--url", url + CUT_OFF, "--maxPageRetries", "0", "--behaviors", "autofetch", "--scopeType", "page", "--collection", "unread", "--cwd", cwd,
    "--redisDedupeUrl", redis.url, "--logLevel", "debug", "--context", "capture,page,behaviorScript"], { timeoutMs: 90_000 });
  const archive = join(cwd, "collections", "unread", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 100_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("a srcset candidate only the autofetch asks for, its response never read by the page", () => {
  it("is fetched by the autofetch's no-cors fetch, which the page never reads", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    const lines = logLines(crawl.stderr);
    expect(lines.filter((l) => l.message === "page crawled").map((l) => l.details.url)).toEqual([url + PAGE]);
    expect(lines.some((l) => l.message === `Autofetch: started non-cors stream for ${url}${AUTOFETCHED_ONLY}`)).toBe(true);
    expect(requests.filter((r) => r === AUTOFETCHED_ONLY)).toEqual([AUTOFETCHED_ONLY]);
  });

  it("does not hold the page's end: its drain is not slow", () => {
    const lines = logLines(crawl.stderr);
    expect(lines.filter((l) => l.message === "page timings").map((l) => l.details.url).sort()).toEqual([url + PAGE, url + CUT_OFF].sort());
    const slow = lines.filter((l) => l.message === "the page's drain before the page is read was slow");
    expect(slow.map((l) => l.details.urls)).toEqual([]);
  });

  it("is stored whole, as each image is: one 200 response each, with the server's bytes, none truncated", () => {
    for (const path of IMAGES) {
      const stored = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === url + path);
      expect(stored, path).toHaveLength(1);
      expect(httpStatus(stored[0]), path).toBe(200);
      expect(stored[0].payload.equals(png(path)), path).toBe(true);
      expect(stored[0].headers.get("warc-truncated"), path).toBeUndefined();
    }
  });
});

describe("a page's body of no declared length, cut off by the connection", () => {
  it("is still known cut off: stored as the browser received it, marked WARC-Truncated", () => {
    const stored = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === url + CUT_OFF);
    expect(stored).toHaveLength(1);
    expect(stored[0].payload.toString("utf8")).toBe(CUT_OFF_SENT);
    expect(stored[0].headers.get("warc-truncated")).toBe("disconnect");
  });
});
