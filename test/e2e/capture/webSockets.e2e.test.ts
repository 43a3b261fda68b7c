// WebSockets archived (iipc/warc-specifications#115, browsertrix-crawler PR #1020): a page on loopback opens two
// sockets; one the server closes after its third message, one it keeps sending on until the page ends. Each
// socket's frames are one resource record of JSON lines, beside its handshake's request and response records.
// The page (and a worker of it) also try sockets to a forbidden address: a server on 127.0.0.2, which the crawler
// is told to treat as link-local (CRAWLER_TEST_LINK_LOCAL), by address and by a name mapped to it
// (CRAWLER_TEST_HOSTS); it must never see a connection.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { detectReplayFailure, replayPage, startReplayServer } from "../../helpers/replay.js";
import { gzipMembers, httpHeader, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

const BINARY_FROM_SERVER = Buffer.from([0, 1, 2, 253, 254, 255]);
const BINARY_FROM_PAGE = [9, 8, 7, 0, 255];

// The page answers each message of the closing socket, so the order of the frames is fixed; the open
// socket's server starts its ticker once the page's greeting arrived.
const page = (forbiddenPort: number, securePort: number) => `<!doctype html><html><head><title>sockets</title><link rel="icon" href="data:,"></head><body>
<p>WS-PAGE-MARKER</p><script>
const base = "ws://" + location.host;
const a = new WebSocket(base + "/closing");
a.binaryType = "arraybuffer";
let n = 0;
a.onmessage = (e) => {
  n += 1;
  if (n === 1) a.send("page got " + e.data);
  if (n === 2) a.send(new Uint8Array(${JSON.stringify(BINARY_FROM_PAGE)}));
};
a.onclose = () => { document.title = "closed after " + n; };
const b = new WebSocket(base + "/open");
b.onopen = () => b.send("hello open socket");
new WebSocket("wss://127.0.0.1:${securePort}/secure").onmessage = (e) => e.target.send("secure " + e.data);
for (const url of ["ws://evil.test:${forbiddenPort}/by-name", "ws://127.0.0.2:${forbiddenPort}/by-address"]) new WebSocket(url);
new Worker(URL.createObjectURL(new Blob(['new WebSocket("ws://evil.test:${forbiddenPort}/from-worker")'])));
</script></body></html>`;

let server: Server;
let forbidden: Server;
/** The wss:// server (TLS, a self-signed certificate made with openssl; Chromium ignores certificate errors). */
let secure: Server;
let secureHost: string;
/** TCP connections the forbidden server accepted. */
let forbiddenConnections = 0;
let host: string;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
/** Each record's WARC head as written. */
let warcHeads: string[];
/** What the open socket's server sent, in order; what the closing socket's server received. */
const openSent: string[] = [];
const closingReceived: string[] = [];

beforeAll(async () => {
  forbidden = createServer((_req, res) => res.writeHead(200).end("secret"));
  new WebSocketServer({ server: forbidden }).on("connection", (socket: WebSocket) => socket.send("secret"));
  forbidden.on("connection", () => (forbiddenConnections += 1));
  await new Promise<void>((r) => forbidden.listen(0, "127.0.0.2", r));
  const forbiddenPort = (forbidden.address() as { port: number }).port;
  cwd = mkdtempSync(join(tmpdir(), "crawl-websockets-"));
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", join(cwd, "key.pem"),
    "-out", join(cwd, "cert.pem"), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  secure = createTlsServer({ key: readFileSync(join(cwd, "key.pem")), cert: readFileSync(join(cwd, "cert.pem")) }, (_req, res) => res.writeHead(404).end());
  new WebSocketServer({ server: secure }).on("connection", (socket: WebSocket) => {
    socket.send("S-1");
    socket.once("message", () => socket.close(1000));
  });
  await new Promise<void>((r) => secure.listen(0, "127.0.0.1", r));
  secureHost = `127.0.0.1:${(secure.address() as { port: number }).port}`;
  server = createServer((req, res) => {
    if (req.url === "/page.html") res.writeHead(200, { "Content-Type": "text/html" }).end(page(forbiddenPort, (secure.address() as { port: number }).port));
    else res.writeHead(404).end();
  });
  const sockets = new WebSocketServer({ server });
  sockets.on("connection", (socket: WebSocket, req) => {
    if (req.url === "/closing") {
      socket.send("A-1");
      socket.on("message", (data, isBinary) => {
        closingReceived.push(isBinary ? `binary:${Buffer.from(data as Buffer).toString("hex")}` : String(data));
        if (closingReceived.length === 1) socket.send(BINARY_FROM_SERVER);
        if (closingReceived.length === 2) {
          socket.send("A-3");
          socket.close(1000, "done");
        }
      });
    } else {
      socket.once("message", () => {
        let i = 0;
        const tick = () => {
          i += 1;
          openSent.push(`B-${i}`);
          socket.send(`B-${i}`);
        };
        tick();
        const timer = setInterval(tick, 250);
        socket.on("close", () => clearInterval(timer));
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  host = `127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  crawl = await runCli("crawl", [
    "--url", `http://${host}/page.html`, "--scopeType", "page", "--collection", "ws", "--cwd", cwd, "--generateWACZ",
    "--behaviors", "", "--postLoadDelay", "2", "--netIdleWait", "1", "--extraChromeArgs=--ignore-certificate-errors",
  ], { env: { CRAWLER_TEST_HOSTS: "evil.test=127.0.0.2", CRAWLER_TEST_LINK_LOCAL: "127.0.0.2/32" } });
  const archive = join(cwd, "collections", "ws", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
  warcHeads = readdirSync(archive).flatMap((f) => gzipMembers(readFileSync(join(archive, f))).map((m) => m.data.subarray(0, m.data.indexOf("\r\n\r\n")).toString("utf8")));
}, 120_000);

afterAll(async () => {
  for (const s of [server, forbidden, secure]) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
  rmSync(cwd, { recursive: true, force: true });
});

const recordsOf = (path: string) => records.filter((r) => r.headers.get("warc-target-uri") === `ws://${host}${path}`);
const ofType = (path: string, type: string) => {
  const found = recordsOf(path).filter((r) => r.headers.get("warc-type") === type);
  expect(found.length, `${type} records of ${path}`).toBe(1);
  return found[0];
};
interface Frame {
  ts: number;
  type: string;
  opcode: number;
  mask: boolean;
  payloadData: string;
}
const framesOf = (path: string): Frame[] => ofType(path, "resource").payload.toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Frame);

describe("WebSockets", () => {
  it("crawls the page", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    // The page saw the closing socket's three messages.
    const page = crawl.stderr.split("\n").find((l) => l.includes('"page crawled"'))!;
    expect(JSON.parse(page).details.title).toBe("closed after 3");
  });

  it("stores the closed socket's frames, both ways, text and binary, in order, as one resource record of JSON lines", () => {
    expect(closingReceived).toEqual(["page got A-1", `binary:${Buffer.from(BINARY_FROM_PAGE).toString("hex")}`]);
    const frames = framesOf("/closing");
    expect(frames.map(({ type, opcode, mask, payloadData }) => ({ type, opcode, mask, payloadData }))).toEqual([
      { type: "recv", opcode: 1, mask: false, payloadData: "A-1" },
      { type: "send", opcode: 1, mask: true, payloadData: "page got A-1" },
      { type: "recv", opcode: 2, mask: false, payloadData: BINARY_FROM_SERVER.toString("base64") },
      { type: "send", opcode: 2, mask: true, payloadData: Buffer.from(BINARY_FROM_PAGE).toString("base64") },
      { type: "recv", opcode: 1, mask: false, payloadData: "A-3" },
    ]);
    // Seconds after the handshake, in the order they came.
    for (let i = 0; i < frames.length; i++) {
      expect(frames[i].ts).toBeGreaterThanOrEqual(i ? frames[i - 1].ts : 0);
      expect(frames[i].ts).toBeLessThan(30);
    }
    const resource = ofType("/closing", "resource");
    expect(resource.headers.get("content-type")).toBe('application/jsonl; format="cdp"');
    expect(resource.headers.get("warc-resource-type")).toBe("websocket");
  });

  it("stores each socket's handshake as request and response records, headers only, marked WARC-Truncated", () => {
    for (const path of ["/closing", "/open"]) {
      expect(recordsOf(path).map((r) => r.headers.get("warc-type"))).toEqual(["resource", "response", "request"]);
      const [resource, response, request] = ["resource", "response", "request"].map((t) => ofType(path, t));
      expect(response.httpHead?.split("\r\n")[0]).toBe("HTTP/1.1 101 Switching Protocols");
      expect(httpHeader(response, "upgrade")).toBe("websocket");
      expect(httpHeader(response, "sec-websocket-accept")).toMatch(/^[A-Za-z0-9+/]+=*$/);
      expect(response.payload.length).toBe(0);
      expect(request.httpHead?.split("\r\n")[0]).toBe(`GET ${path} HTTP/1.1`);
      expect(httpHeader(request, "upgrade")).toBe("websocket");
      expect(httpHeader(request, "host")).toBe(host);
      expect(httpHeader(request, "sec-websocket-key")).toMatch(/^[A-Za-z0-9+/]+=*$/);
      for (const handshake of [response, request]) {
        expect(handshake.headers.get("warc-truncated")).toBe("payloadNotAvailable");
        expect(handshake.headers.get("warc-resource-type")).toBe("websocket");
        expect(handshake.headers.get("warc-date")).toBe(resource.headers.get("warc-date"));
      }
      expect(response.headers.get("warc-concurrent-to")).toBe(resource.headers.get("warc-record-id"));
      // The request's two WARC-Concurrent-To lines (the parsed headers keep one): the response's, then the frames'.
      const head = warcHeads.find((h) => h.includes("\r\nWARC-Type: request\r\n") && h.includes(`\r\nWARC-Target-URI: ws://${host}${path}\r\n`))!;
      expect(head.split("\r\n").filter((l) => l.startsWith("WARC-Concurrent-To: ")).map((l) => l.slice(20))).toEqual([
        response.headers.get("warc-record-id"), resource.headers.get("warc-record-id"),
      ]);
    }
  });

  it("stores the frames of a socket still open when the page ended: what arrived until then", () => {
    const frames = framesOf("/open");
    expect(frames[0]).toMatchObject({ type: "send", opcode: 1, payloadData: "hello open socket" });
    const received = frames.slice(1);
    // --postLoadDelay 2 at one message each 250 ms: several arrived, all of them in order, none missing.
    expect(received.length).toBeGreaterThanOrEqual(3);
    expect(received.map((f) => [f.type, f.opcode, f.payloadData])).toEqual(received.map((_, i) => ["recv", 1, `B-${i + 1}`]));
    // The server went on sending until the browser went away: the record stops where the page ended.
    expect(openSent.length).toBeGreaterThanOrEqual(received.length);
    console.log(JSON.stringify({ openSocketFramesRecorded: received.length, openSocketFramesSentByServer: openSent.length }));
  });

  it("records a wss:// socket the same way (through the address policy's gate, TLS end to end)", () => {
    const frames = records.filter((r) => r.headers.get("warc-target-uri") === `wss://${secureHost}/secure`);
    expect(frames.map((r) => r.headers.get("warc-type"))).toEqual(["resource", "response", "request"]);
    const lines = frames[0].payload.toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Frame);
    expect(lines.map((f) => [f.type, f.opcode, f.payloadData])).toEqual([["recv", 1, "S-1"], ["send", 1, "secure S-1"]]);
    expect(frames[1].httpHead?.split("\r\n")[0]).toBe("HTTP/1.1 101 Switching Protocols");
  });

  it("never opens a socket to an address the policy refuses, from the page or from a worker", () => {
    expect(forbiddenConnections).toBe(0);
    const blocked = logLines(crawl.stderr).filter((l) => l.message.startsWith("socket blocked")).map((l) => `${l.details.host as string}: ${l.details.reason as string}`);
    expect(blocked.sort()).toEqual([
      "127.0.0.2: not fetched: 127.0.0.2, a link-local address",
      "evil.test: not fetched: evil.test resolves to 127.0.0.2, a link-local address",
      "evil.test: not fetched: evil.test resolves to 127.0.0.2, a link-local address",
    ]);
    expect(records.filter((r) => /evil\.test|127\.0\.0\.2/.test(r.headers.get("warc-target-uri") ?? ""))).toEqual([]);
  });

  it("ReplayWeb.page still replays the page", async () => {
    const replay = await startReplayServer(join(cwd, "collections", "ws"));
    try {
      const result = await replayPage(replay, { source: "/archives/ws.wacz", url: `http://${host}/page.html`, waitForText: "WS-PAGE-MARKER", timeoutMs: 45_000 });
      expect(detectReplayFailure(result.text)).toBeNull();
      expect(result.text).toContain("WS-PAGE-MARKER");
    } finally {
      await replay.close();
    }
  }, 60_000);
});
