// A page's WebSockets are bounded (capture/webSockets.ts MAX_SOCKETS_PER_PAGE): two pages crawled in one tab each open
// four sockets more than the cap, one after another, to a loopback ws server that greets each. Of each page exactly
// the first MAX_SOCKETS_PER_PAGE are recorded, with their greeting; the rest are not, and each page says so once;
// both pages are crawled. Each page is its own seed: its seed's bytes (reports/seeds.jsonl) are those of its records,
// its sockets' included.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { MAX_SOCKETS_PER_PAGE } from "../../../src/capture/webSockets.js";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

const OPENED = MAX_SOCKETS_PER_PAGE + 4;
const PAGES = ["a", "b"];

// Opened in order, each once the one before it is open, so which are first is fixed.
const page = (name: string) => `<!doctype html><html><head><title>${name}</title><link rel="icon" href="data:,"></head><body><script>
const held = [];
const openNext = (i) => {
  if (i > ${OPENED}) return void (document.title = "opened all");
  const socket = new WebSocket("ws://" + location.host + "/${name}/" + i);
  held.push(socket);
  socket.onopen = () => openNext(i + 1);
};
openNext(1);
</script></body></html>`;

let server: Server;
let host: string;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
/** The socket paths the server accepted. */
const accepted: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const name = /^\/(\w)\.html$/.exec(req.url ?? "")?.[1];
    if (name && PAGES.includes(name)) res.writeHead(200, { "Content-Type": "text/html" }).end(page(name));
    else res.writeHead(404).end();
  });
  new WebSocketServer({ server }).on("connection", (socket: WebSocket, req) => {
    accepted.push(req.url ?? "");
    socket.send(`hello ${req.url}`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  host = `127.0.0.1:${(server.address() as { port: number }).port}`;
  cwd = mkdtempSync(join(tmpdir(), "crawl-websocket-cap-"));
  crawl = await runCli("crawl", [
    ...PAGES.flatMap((name) => ["--url", `http://${host}/${name}.html`]), "--scopeType", "page", "--collection", "cap", "--cwd", cwd, "--workers", "1",
    "--behaviors", "", "--postLoadDelay", "2", "--netIdleWait", "1",
  ]);
  const archive = join(cwd, "collections", "cap", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 120_000);

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(cwd, { recursive: true, force: true });
});

const numbered = (name: string, count: number) => Array.from({ length: count }, (_, i) => `/${name}/${i + 1}`);

describe("the WebSockets of a page, bounded", () => {
  it("both pages are crawled, and every socket each opened reached the server", () => {
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    expect(logLines(crawl.stderr).filter((l) => l.message === "page crawled").map((l) => l.details.title).sort()).toEqual(["opened all", "opened all"]);
    expect(accepted.slice().sort()).toEqual(PAGES.flatMap((name) => numbered(name, OPENED)).sort());
  });

  it("records exactly the first MAX_SOCKETS_PER_PAGE sockets of each page, each with its greeting", () => {
    const recorded = records.filter((r) => r.headers.get("warc-type") === "resource" && r.headers.get("warc-target-uri")?.startsWith("ws://"));
    const paths = recorded.map((r) => (r.headers.get("warc-target-uri") ?? "").slice(`ws://${host}`.length));
    expect(paths.slice().sort()).toEqual(PAGES.flatMap((name) => numbered(name, MAX_SOCKETS_PER_PAGE)).sort());
    for (const record of recorded) {
      const path = (record.headers.get("warc-target-uri") ?? "").slice(`ws://${host}`.length);
      expect(record.payload.toString("utf8").split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { payloadData: string }).payloadData)).toEqual([`hello ${path}`]);
    }
    for (const type of ["request", "response"]) {
      expect(records.filter((r) => r.headers.get("warc-type") === type && r.headers.get("warc-target-uri")?.startsWith("ws://")).length).toBe(PAGES.length * MAX_SOCKETS_PER_PAGE);
    }
  });

  it("says so once per page, naming the first socket left out", () => {
    expect(MAX_SOCKETS_PER_PAGE).toBe(16);
    const warnings = logLines(crawl.stderr).filter((l) => l.message === "websockets past the page's cap are not recorded");
    const seen: Record<string, unknown>[] = warnings.map((l) => ({ level: l.logLevel, ...l.details }));
    expect(seen.sort((a, b) => String(a.page).localeCompare(String(b.page)))).toEqual(PAGES.map((name) => ({
      level: "warn", page: `http://${host}/${name}.html`, url: `ws://${host}/${name}/${MAX_SOCKETS_PER_PAGE + 1}`, capSockets: MAX_SOCKETS_PER_PAGE,
    })));
  });

  it("counts each page's socket records in its seed's bytes", () => {
    const lines = readFileSync(join(cwd, "collections", "cap", "reports", "seeds.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { url: string; bytes: number });
    const ofPage = (name: string) => records.filter((r) => [`http://${host}/${name}.html`, `ws://${host}/${name}/`].some((p) => (r.headers.get("warc-target-uri") ?? "").startsWith(p)));
    const socketBytes = ofPage("a").filter((r) => r.headers.get("warc-target-uri")?.startsWith("ws:")).reduce((sum, r) => sum + r.length, 0);
    expect(socketBytes).toBeGreaterThan(0);
    expect(records.filter((r) => r.headers.get("warc-type") !== "warcinfo").length).toBe(ofPage("a").length + ofPage("b").length);
    expect(lines.map((l) => [l.url, l.bytes])).toEqual(PAGES.map((name) => [`http://${host}/${name}.html`, ofPage(name).reduce((sum, r) => sum + r.length, 0)]));
  });
});
