import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "./helpers/cli.js";
import { httpStatus, readWarcRecords, type RawRecord } from "./helpers/warcFile.js";

// Larger than the capture's streaming threshold (8 MB), so it goes through Fetch.takeResponseBodyAsStream.
const BIG = randomBytes(9_000_000);
const RANGED = randomBytes(50_000);
const digestOf = (b: Buffer) => "sha256:" + createHash("sha256").update(b).digest("hex");

const PAGE = `<!doctype html><html><head><title>waiting</title><link rel="icon" href="data:,"></head><body><script>
Promise.all([
  fetch("/big.bin").then((r) => r.arrayBuffer()),
  fetch("/ranged.bin", { headers: { Range: "bytes=0-99" } }).then((r) => r.arrayBuffer().then((b) => [r.status, b.byteLength])),
]).then(([big, [status, len]]) => { document.title = "big " + big.byteLength + " ranged " + status + " " + len; });
</script></body></html>`;

let server: Server;
let base: string;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/page.html") {
      res.writeHead(200, { "Content-Type": "text/html" }).end(PAGE);
    } else if (req.url === "/big.bin") {
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": BIG.length }).end(BIG);
    } else if (req.url === "/ranged.bin") {
      const range = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? "");
      if (range) {
        const [start, end] = [Number(range[1]), Number(range[2])];
        res.writeHead(206, { "Content-Type": "application/octet-stream", "Content-Range": `bytes ${start}-${end}/${RANGED.length}`, "Content-Length": end - start + 1 });
        res.end(RANGED.subarray(start, end + 1));
      } else {
        res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": RANGED.length }).end(RANGED);
      }
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  cwd = mkdtempSync(join(tmpdir(), "crawl-capture-"));
  crawl = await runCli("crawl", ["--url", `${base}/page.html`, "--scopeType", "page", "--collection", "cap", "--cwd", cwd, "--generateWACZ"]);
  const archive = join(cwd, "collections", "cap", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 120_000);

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(cwd, { recursive: true, force: true });
});

const responseFor = (path: string) =>
  records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === base + path);

describe("capture of large and partial bodies", () => {
  it("streams a large body to the WARC intact and still hands it to the page", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    const [big] = responseFor("/big.bin");
    expect(big.payload.length).toBe(BIG.length);
    expect(big.headers.get("warc-payload-digest")).toBe(digestOf(BIG));
    const page = crawl.stderr.split("\n").find((l) => l.includes('"page crawled"'))!;
    expect(JSON.parse(page).details.title).toBe(`big ${BIG.length} ranged 206 100`);
  });

  it("never stores a 206 fragment: the full resource is fetched and stored as a 200", () => {
    const ranged = responseFor("/ranged.bin");
    expect(ranged.map(httpStatus)).toEqual([200]);
    expect(ranged[0].headers.get("warc-payload-digest")).toBe(digestOf(RANGED));
  });
});
