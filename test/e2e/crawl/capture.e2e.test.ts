import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// Larger than the capture's streaming threshold (8 MB), so it goes through Fetch.takeResponseBodyAsStream.
const BIG = randomBytes(9_000_000);
const RANGED = randomBytes(50_000);
// Every byte value: a body read as UTF-8 text anywhere on the way would not round-trip.
const BINARY_POST = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const TEXT_POST = Buffer.from("second body, same URL");
const ASSET = randomBytes(8_000);
const FLAKY_PAGE = `<!doctype html><html><head><title>flaky</title><link rel="icon" href="data:,"></head><body><p>FLAKY-PAGE-MARKER</p><script>
fetch("/c/asset.bin").then((r) => r.arrayBuffer()).then((b) => { document.title = "asset " + b.byteLength; });
</script></body></html>`;
// No icon link: the browser probes /favicon.ico by itself (404 here). The PUT to another origin
// (localhost vs 127.0.0.1) with a custom header makes the browser send a CORS preflight first.
const postPage = (port: number) => `<!doctype html><html><head><title>posting</title></head><body><script>
const bin = new Uint8Array(256); for (let i = 0; i < 256; i++) bin[i] = i;
fetch("/echo", { method: "POST", body: bin, headers: { "Content-Type": "application/octet-stream" } })
  .then(() => fetch("/echo", { method: "POST", body: ${JSON.stringify(TEXT_POST.toString())}, headers: { "Content-Type": "text/plain" } }))
  .then(() => fetch("http://localhost:${port}/cors", { method: "PUT", body: "cross-origin", headers: { "X-Test": "1" } }))
  .then(() => { document.title = "posted"; });
</script></body></html>`;
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
let flakyRequests = 0;
const corsMethods: string[] = [];
const notFound: string[] = [];
const assetRequests: string[] = [];

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
    } else if (req.url === "/post.html") {
      res.writeHead(200, { "Content-Type": "text/html" }).end(postPage((server.address() as { port: number }).port));
    } else if (req.url === "/cors") {
      corsMethods.push(req.method ?? "");
      res.writeHead(200, { "Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "PUT", "Access-Control-Allow-Headers": "X-Test", "Content-Type": "text/plain" }).end("cors ok");
    } else if (req.url === "/echo" && req.method === "POST") {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => res.writeHead(200, { "Content-Type": "text/plain" }).end(`got ${Buffer.concat(chunks).length} bytes`));
    } else if (req.url === "/c/page.html") {
      // 1st: the browser's (its body read fails, test hook); 2nd: the direct fetch for it, refused;
      // 3rd: the retry's.
      flakyRequests += 1;
      if (flakyRequests === 2) res.writeHead(503, { "Content-Type": "text/plain", "Cache-Control": "no-store" }).end("busy");
      else res.writeHead(200, { "Content-Type": "text/html", "Cache-Control": "no-store" }).end(FLAKY_PAGE);
    } else if (req.url === "/c/asset.bin") {
      assetRequests.push(String(req.headers["user-agent"]));
      // A declared length: the body is read whole (not streamed as it comes), where the test hook fails its read once.
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": ASSET.length, "Cache-Control": "no-store" }).end(ASSET);
    } else {
      notFound.push(req.url ?? "");
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  cwd = mkdtempSync(join(tmpdir(), "crawl-capture-"));
  crawl = await runCli(
    "crawl",
    ["--url", `${base}/page.html`, "--url", `${base}/post.html`, "--url", `${base}/c/page.html`, "--scopeType", "page",
      "--collection", "cap", "--cwd", cwd, "--generateWACZ", "--statsFilename", join(cwd, "stats.json")],
    { env: { WARC_CRAWLER_TEST_FAIL_BODY_ONCE: "/c/" } },
  );
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
    const page = crawl.stderr.split("\n").find((l) => l.includes('"page crawled"') && l.includes(`${base}/page.html`))!;
    expect(JSON.parse(page).details.title).toBe(`big ${BIG.length} ranged 206 100`);
  });

  it("never stores a 206 fragment: the full resource is fetched and stored as a 200", () => {
    const ranged = responseFor("/ranged.bin");
    expect(ranged.map(httpStatus)).toEqual([200]);
    expect(ranged[0].headers.get("warc-payload-digest")).toBe(digestOf(RANGED));
  });
});

const recordsFor = (type: string, path: string) =>
  records.filter((r) => r.headers.get("warc-type") === type && r.headers.get("warc-target-uri") === base + path);

describe("request bodies", () => {
  it("stores two POSTs to one URL with different bodies, each request body byte-exact", () => {
    const requests = recordsFor("request", "/echo");
    expect(requests.map((r) => r.block.subarray(0, r.block.indexOf(" ")).toString())).toEqual(["POST", "POST"]);
    expect(requests.map((r) => r.payload.toString("hex")).sort()).toEqual([BINARY_POST.toString("hex"), TEXT_POST.toString("hex")].sort());
    const responses = recordsFor("response", "/echo");
    expect(responses.map((r) => r.payload.toString()).sort()).toEqual([`got ${BINARY_POST.length} bytes`, `got ${TEXT_POST.length} bytes`].sort());
  });
});

describe("browser-internal traffic", () => {
  it("records no CORS preflight and no missing favicon the browser probed for, but the real request", () => {
    expect(corsMethods).toEqual(["OPTIONS", "PUT"]);
    const cors = records.filter((r) => r.headers.get("warc-target-uri")?.endsWith("/cors") && r.headers.get("warc-type") === "request");
    expect(cors.map((r) => r.block.subarray(0, r.block.indexOf(" ")).toString())).toEqual(["PUT"]);
    expect(notFound).toContain("/favicon.ico");
    expect(records.filter((r) => r.headers.get("warc-target-uri")?.endsWith("/favicon.ico"))).toEqual([]);
  });
});

describe("a response body the browser cannot give", () => {
  it("is fetched directly and stored whole, not stored empty", () => {
    // The browser's request, then the direct fetch for the body it could not give; the page's retry (its document
    // was lost) is answered from that stored record, not sent again.
    expect(assetRequests.length).toBe(2);
    const stored = recordsFor("response", "/c/asset.bin");
    expect(stored.length).toBe(1);
    expect(stored[0].headers.get("warc-payload-digest")).toBe(digestOf(ASSET));
  });

  it("of a page's document, with no direct fetch to stand in, fails the attempt: the page is retried and stored then", () => {
    expect(flakyRequests).toBe(3);
    const retried = crawl.stderr.split("\n").filter((l) => l.includes("page failed, will retry")).map((l) => JSON.parse(l).details);
    expect(retried).toEqual([{ url: `${base}/c/page.html`, error: "the page's document could not be stored" }]);
    const stored = recordsFor("response", "/c/page.html");
    expect(stored.map(httpStatus)).toEqual([200]);
    expect(stored[0].payload.toString()).toBe(FLAKY_PAGE);
    const stats = JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8"));
    expect(stats).toMatchObject({ crawled: 3, failed: 0, status: "done" });
  });
});
