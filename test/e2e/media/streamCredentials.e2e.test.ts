/**
 * A stream's credentials stay with its origin: a page on 127.0.0.1 sets a session cookie and fetches an HLS
 * playlist with an Authorization header; the playlist names segments on its own origin and on a CDN (127.0.0.2,
 * another origin). The crawler fetches every segment itself (capture/adaptiveStreams.ts): those on the site's
 * origin carry the browser's cookies for them (the session's and one the playlist's answer set) and the Authorization, those on the CDN neither, with Referer and Origin as
 * the browser sends them to another origin (strict-origin-when-cross-origin; a CORS-mode fetch's Origin). Checked
 * in the WARC request records (the headers sent) and in what the CDN received.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback, type LoopbackListener } from "../../../fixtures/loopback.js";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

const SESSION = "sid=s3cret-session";
/** Set by the playlist's answer: the player would send it with the segments after it. */
const MANIFEST_COOKIE = "hls=set-by-the-playlist";
const TOKEN = "Bearer t0ken-for-the-site";

let site: LoopbackListener;
let cdn: Server;
let cdnOrigin: string;
/** Every request the CDN got: its path and headers. */
const cdnRequests: { path: string; headers: IncomingHttpHeaders }[] = [];
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];

const playlist = () => `#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:2
#EXT-X-MEDIA-SEQUENCE:0
#EXTINF:2.0,
seg0.ts
#EXTINF:2.0,
${cdnOrigin}/cdn/seg1.ts
#EXTINF:2.0,
/other/seg2.ts
#EXTINF:2.0,
${cdnOrigin}/cdn/seg3.ts
#EXT-X-ENDLIST
`;

const PAGE = `<!doctype html><html><head><title>stream</title><link rel="icon" href="data:,"></head><body><p>stream page</p>
<script>fetch("/stream/index.m3u8", { headers: { Authorization: ${JSON.stringify(TOKEN)} } }).then((r) => r.text()).then(() => { document.title = "fetched"; });</script>
</body></html>`;

beforeAll(async () => {
  cdn = createServer((req, res) => {
    cdnRequests.push({ path: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "Content-Type": "video/mp2t" }).end(`cdn bytes of ${req.url}`);
  });
  await new Promise<void>((r) => cdn.listen(0, "127.0.0.2", r));
  cdnOrigin = `http://127.0.0.2:${(cdn.address() as { port: number }).port}`;
  site = await listenOnLoopback(createServer((req, res) => {
    if (req.url === "/page.html") res.writeHead(200, { "Content-Type": "text/html", "Set-Cookie": `${SESSION}; Path=/; HttpOnly` }).end(PAGE);
    // With its length: a fetch answered chunked is read as a live body, not as a manifest.
    else if (req.url === "/stream/index.m3u8") res.writeHead(200, { "Content-Type": "application/vnd.apple.mpegurl", "Content-Length": Buffer.byteLength(playlist()), "Set-Cookie": `${MANIFEST_COOKIE}; Path=/` }).end(playlist());
    else if (req.url?.endsWith(".ts")) res.writeHead(200, { "Content-Type": "video/mp2t" }).end(`site bytes of ${req.url}`);
    else res.writeHead(404).end();
  }));
  cwd = mkdtempSync(join(tmpdir(), "stream-credentials-"));
  crawl = await runCli("crawl", [
    "--url", `${site.url}/page.html`, "--scopeType", "page", "--collection", "creds", "--cwd", cwd, "--behaviors", "", "--postLoadDelay", "1", "--netIdleWait", "1",
  ]);
  const archive = join(cwd, "collections", "creds", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 120_000);

afterAll(async () => {
  await site?.close();
  await new Promise<void>((r) => (cdn ? cdn.close(() => r()) : r()));
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

/** A request record's HTTP headers, names lower-cased; without User-Agent (the browser's, carried everywhere). */
function requestHeaders(url: string): [string, string][] {
  const record = records.find((r) => r.headers.get("warc-type") === "request" && r.headers.get("warc-target-uri") === url);
  expect(record, `a request record for ${url}`).toBeDefined();
  const lines = (record?.httpHead ?? "").split("\r\n").slice(1);
  return lines.map((l) => [l.slice(0, l.indexOf(":")).trim().toLowerCase(), l.slice(l.indexOf(":") + 1).trim()] as [string, string])
    .filter(([n]) => n !== "user-agent")
    // Cookies of one path length come in no set order.
    .map(([n, v]) => [n, n === "cookie" ? v.split("; ").sort().join("; ") : v]);
}

describe("a stream's files on another origin", () => {
  it("the crawl stores all four segments", () => {
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    const line = logLines(crawl.stderr).find((l) => l.message === "stream captured")?.details;
    expect(line).toMatchObject({ segments: 4, files: 4, stored: 4, complete: true });
  });

  it("the site's own segments are asked for with the browser's cookies, the Authorization and the whole Referer", () => {
    const host = site.url.slice("http://".length);
    for (const path of ["/stream/seg0.ts", "/other/seg2.ts"]) {
      expect(requestHeaders(site.url + path).sort()).toEqual([
        ["accept", "*/*"],
        ["accept-encoding", "gzip, deflate, br"],
        ["authorization", TOKEN],
        ["cookie", `${MANIFEST_COOKIE}; ${SESSION}`],
        ["host", host],
        ["referer", `${site.url}/page.html`],
      ]);
    }
  });

  it("the CDN's segments carry no cookie nor Authorization, the Referer cut to the page's origin, and an Origin", () => {
    const host = cdnOrigin.slice("http://".length);
    for (const path of ["/cdn/seg1.ts", "/cdn/seg3.ts"]) {
      expect(requestHeaders(cdnOrigin + path).sort()).toEqual([
        ["accept", "*/*"],
        ["accept-encoding", "gzip, deflate, br"],
        ["host", host],
        ["origin", site.url],
        ["referer", `${site.url}/`],
      ]);
    }
  });

  it("the CDN never received the session cookie or the token", () => {
    expect(cdnRequests.map((r) => r.path).sort()).toEqual(["/cdn/seg1.ts", "/cdn/seg3.ts"]);
    for (const { headers } of cdnRequests) {
      expect(headers.cookie).toBeUndefined();
      expect(headers.authorization).toBeUndefined();
      expect(JSON.stringify(headers)).not.toContain("s3cret");
      expect(JSON.stringify(headers)).not.toContain("set-by-the-playlist");
    }
  });
});
