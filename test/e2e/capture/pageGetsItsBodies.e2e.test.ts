// A body the capture reads as a stream (past 8 MB, or of no declared length) goes on to the page only once the capture
// has all of it. The page is not done until it received that body: what its script then does (a title, an image it
// adds) is part of the page, and must be in the page's entry and in the archive. On the defaults: the script works
// through the body on timers once it has it, which the behaviors' watch of deferred work waits for (with behaviors off,
// a page whose body has reached it gets 100 ms more: on an idle machine this script was cut off).
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { png } from "../../helpers/loginSite.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

const BIG = Buffer.alloc(9_000_000, 7);
/** The page's script takes its time over the first chunks (as a page parsing a large JSON does), then adds an image. */
const PAGE = `<!doctype html><html><head><title>waiting</title><link rel="icon" href="data:,"></head><body><p>BIG</p><script>
fetch("/big.bin").then(async (response) => {
  const reader = response.body.getReader();
  let size = 0;
  for (let chunk = 0; ; chunk++) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (chunk < 30) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  document.title = "read " + size;
  const img = document.createElement("img");
  img.src = "/after.png";
  document.body.append(img);
});
</script></body></html>`;

let server: Server;
let url: string;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/page.html") res.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" }).end(PAGE);
    else if (req.url === "/big.bin") res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(BIG.length), "cache-control": "no-store" }).end(BIG);
    else if (req.url === "/after.png") res.writeHead(200, { "content-type": "image/png", "cache-control": "no-store" }).end(png("/after.png"));
    else res.writeHead(404, { "content-length": "0" }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cwd = mkdtempSync(join(tmpdir(), "crawl-page-bodies-"));
  crawl = await runCli("crawl", ["--url", `${url}/page.html`, "--scopeType", "page", "--collection", "bodies", "--cwd", cwd], { timeoutMs: 90_000 });
  const archive = join(cwd, "collections", "bodies", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 100_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(cwd, { recursive: true, force: true });
});

describe("a streamed body the capture handed on to the page", () => {
  it("is the page's before the page ends: its title is the one the script set once it had the body", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    const page = logLines(crawl.stderr).find((line) => line.message === "page crawled");
    expect(page?.details.title).toBe(`read ${BIG.length}`);
  });

  it("and what the script added then is in the archive: the body whole, and the image", () => {
    const responses = records.filter((r) => r.headers.get("warc-type") === "response");
    expect(responses.map((r) => r.headers.get("warc-target-uri")).sort()).toEqual([`${url}/after.png`, `${url}/big.bin`, `${url}/page.html`]);
    const big = responses.find((r) => r.headers.get("warc-target-uri") === `${url}/big.bin`)!;
    expect(big.payload.equals(BIG)).toBe(true);
    expect(big.headers.get("warc-truncated")).toBeUndefined();
    expect(responses.find((r) => r.headers.get("warc-target-uri") === `${url}/after.png`)!.payload.equals(png("/after.png"))).toBe(true);
  });
});
