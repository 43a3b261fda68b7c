// WARC-Protocol (iipc/warc-specifications#42): each exchange's records say what it went over. An HTTP/2 site over
// TLS on 127.0.0.1 (node:http2, a self-signed certificate made with openssl for the test; Chromium is told to
// ignore certificate errors with --extraChromeArgs) and a plain HTTP/1.1 site, crawled together.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { detectReplayFailure, replayPage, startReplayServer } from "../../helpers/replay.js";
import { gzipMembers } from "../../helpers/warcFile.js";

// Larger than the capture's streaming threshold (8 MB): taken as a stream and fulfilled by the capture, which
// Chromium then reports as http/1.1 without TLS; the records must still say h2 over TLS 1.3.
const BIG = randomBytes(9_000_000);
const RANGED = randomBytes(40_000);

const H2_PAGE = `<!doctype html><html><head><title>waiting</title><link rel="icon" href="data:,"><script src="/app.js"></script></head>
<body><p>H2-PAGE-MARKER</p><script>
Promise.all([fetch("/moved").then((r) => r.text()), fetch("/big.bin").then((r) => r.arrayBuffer())])
  .then(([moved, big]) => { document.title = moved + " " + big.byteLength; document.body.append("LOADED " + document.title); });
</script></body></html>`;
const PLAIN_PAGE = `<!doctype html><html><head><title>plain</title><link rel="icon" href="data:,"></head><body><p>PLAIN</p>
<img src="/pixel.gif"><script>fetch("/ranged.bin", { headers: { Range: "bytes=0-99" } });</script></body></html>`;
const GIF = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");

let cwd: string;
let h2: Http2SecureServer;
let plain: Server;
let h2Base: string;
let plainBase: string;
let crawl: CliResult;
/** Each record's WARC head as written. */
let heads: string[];

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-warc-protocol-"));
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", join(cwd, "key.pem"),
    "-out", join(cwd, "cert.pem"), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  h2 = createSecureServer({ key: readFileSync(join(cwd, "key.pem")), cert: readFileSync(join(cwd, "cert.pem")) }, (req, res) => {
    if (req.url === "/page.html") res.writeHead(200, { "content-type": "text/html" }).end(H2_PAGE);
    else if (req.url === "/app.js") res.writeHead(200, { "content-type": "text/javascript" }).end("window.app = 1;");
    else if (req.url === "/moved") res.writeHead(302, { location: "/final" }).end();
    else if (req.url === "/final") res.writeHead(200, { "content-type": "text/plain" }).end("final");
    else if (req.url === "/big.bin") res.writeHead(200, { "content-type": "application/octet-stream", "content-length": BIG.length }).end(BIG);
    else res.writeHead(404).end();
  });
  plain = createServer((req, res) => {
    if (req.url === "/plain.html") res.writeHead(200, { "Content-Type": "text/html" }).end(PLAIN_PAGE);
    else if (req.url === "/pixel.gif") res.writeHead(200, { "Content-Type": "image/gif" }).end(GIF);
    else if (req.url === "/ranged.bin") {
      const range = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? "");
      if (!range) return void res.writeHead(200, { "Content-Type": "application/octet-stream" }).end(RANGED);
      const [start, end] = [Number(range[1]), Number(range[2])];
      res.writeHead(206, { "Content-Type": "application/octet-stream", "Content-Range": `bytes ${start}-${end}/${RANGED.length}` }).end(RANGED.subarray(start, end + 1));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => h2.listen(0, "127.0.0.1", r));
  await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
  h2Base = `https://127.0.0.1:${(h2.address() as { port: number }).port}`;
  plainBase = `http://127.0.0.1:${(plain.address() as { port: number }).port}`;
  crawl = await runCli("crawl", [
    "--url", `${h2Base}/page.html`, "--url", `${plainBase}/plain.html`, "--scopeType", "page", "--collection", "proto", "--cwd", cwd,
    "--generateWACZ", "--behaviors", "", "--extraChromeArgs=--ignore-certificate-errors",
  ]);
  const archive = join(cwd, "collections", "proto", "archive");
  heads = readdirSync(archive).flatMap((f) => gzipMembers(readFileSync(join(archive, f))).map((m) => m.data.subarray(0, m.data.indexOf("\r\n\r\n")).toString("latin1")));
}, 120_000);

afterAll(async () => {
  plain.closeAllConnections();
  await new Promise<void>((r) => plain.close(() => r()));
  await new Promise<void>((r) => h2.close(() => r()));
  rmSync(cwd, { recursive: true, force: true });
});

const field = (head: string, name: string) => head.split("\r\n").filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}: `)).map((l) => l.slice(name.length + 2));
/** URL -> WARC-Type -> its WARC-Protocol values, for the records of `base`. */
function protocolsOf(base: string): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  for (const head of heads) {
    const [url] = field(head, "WARC-Target-URI");
    const [type] = field(head, "WARC-Type");
    if (!url?.startsWith(base) || (type !== "response" && type !== "request")) continue;
    (out[url.slice(base.length)] ??= {})[type] = field(head, "WARC-Protocol");
  }
  return out;
}

describe("WARC-Protocol", () => {
  it("crawls both sites", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    const page = crawl.stderr.split("\n").find((l) => l.includes('"page crawled"') && l.includes(`${h2Base}/page.html`))!;
    expect(JSON.parse(page).details.title).toBe(`final ${BIG.length}`);
  });

  it("writes h2 and tls/1.3, one header each, on every request and response record of the HTTP/2 site", () => {
    const both = { response: ["h2", "tls/1.3"], request: ["h2", "tls/1.3"] };
    // A redirect hop, a streamed body the capture fulfilled itself, and the page and script read whole.
    expect(protocolsOf(h2Base)).toEqual({ "/page.html": both, "/app.js": both, "/moved": both, "/final": both, "/big.bin": both });
  });

  it("writes http/1.1 for the plain site, from the browser and from a direct fetch (the whole resource behind a 206)", () => {
    const http11 = { response: ["http/1.1"], request: ["http/1.1"] };
    expect(protocolsOf(plainBase)).toEqual({ "/plain.html": http11, "/pixel.gif": http11, "/ranged.bin": http11 });
  });

  it("keeps HTTP/1.1 status and request lines for HTTP/2 exchanges (WARC-Protocol says what went over the wire)", () => {
    const lines = heads.filter((h) => field(h, "WARC-Target-URI")[0]?.startsWith(h2Base)).map((h) => field(h, "WARC-Type")[0]);
    expect(lines.length).toBe(10);
    const archive = join(cwd, "collections", "proto", "archive");
    const blocks = readdirSync(archive).flatMap((f) => gzipMembers(readFileSync(join(archive, f))).map((m) => m.data.toString("latin1")));
    const firstLine = (path: string, type: string) => {
      const record = blocks.find((b) => b.includes(`\r\nWARC-Target-URI: ${h2Base}${path}\r\n`) && b.includes(`\r\nWARC-Type: ${type}\r\n`))!;
      return record.slice(record.indexOf("\r\n\r\n") + 4).split("\r\n")[0];
    };
    expect(firstLine("/page.html", "response")).toBe("HTTP/1.1 200 OK");
    expect(firstLine("/moved", "response")).toBe("HTTP/1.1 302 Found");
    expect(firstLine("/page.html", "request")).toBe("GET /page.html HTTP/1.1");
  });

  it("ReplayWeb.page replays the HTTP/2 page", async () => {
    const replay = await startReplayServer(join(cwd, "collections", "proto"));
    try {
      const result = await replayPage(replay, { source: "/archives/proto.wacz", url: `${h2Base}/page.html`, waitForText: `LOADED final ${BIG.length}`, timeoutMs: 45_000 });
      expect(detectReplayFailure(result.text)).toBeNull();
      // The page, its script, the redirect and the streamed body all replayed.
      expect(result.text).toContain("H2-PAGE-MARKER");
      expect(result.text).toContain(`LOADED final ${BIG.length}`);
    } finally {
      await replay.close();
    }
  }, 60_000);
});
