/**
 * The QA fixture site: pages that replay whole, one whose content comes from a URL with a random part
 * (replay asks for a URL it never captured). A random query parameter alone (query.html) replays whole:
 * ReplayWeb.page's fuzzy matching serves the capture of the same path with another query, and one showing an image from another
 * host (another loopback server, 127.0.0.2, whose requests the crawl blocks: never archived).
 *   main (127.0.0.1): /qa/index.html, /qa/whole.html, /qa/random.html, /qa/query.html, /qa/offsite.html,
 *                     /qa/style.css, /qa/logo.png, /qa/content/<random>.json, /qa/content.json?r=<random>
 *   other (127.0.0.2): /banner.png
 * Each server counts the requests it answered (path with query), so tests can tell live from replay.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { PNG } from "pngjs";

export interface QaSite {
  url: string;
  otherUrl: string;
  /** Requests each server answered, as "GET /path?query". */
  requests: { main: string[]; other: string[] };
  close(): Promise<void>;
}

/** A solid PNG of one colour. */
export function solidPng(width: number, height: number, rgb: [number, number, number]): Buffer {
  const png = new PNG({ width, height });
  for (let i = 0; i < png.data.length; i += 4) png.data.set([...rgb, 255], i);
  return PNG.sync.write(png);
}

const LOGO = solidPng(200, 120, [20, 120, 200]);
const BANNER = solidPng(900, 400, [220, 40, 40]);

/** The text content.json brings into random.html: most of the page's words. */
export const RANDOM_CONTENT = Array.from({ length: 12 }, (_, i) => `Dispatch ${i + 1}: the river rose past the old mill and the ferry waited on the far bank.`).join("\n");

const page = (title: string, body: string): string => `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title><link rel="stylesheet" href="/qa/style.css"><link rel="icon" href="data:,"></head>
<body><h1>${title}</h1>${body}
<p><a href="/qa/index.html">Home</a> <a href="/qa/whole.html">Whole</a> <a href="/qa/random.html">Random</a> <a href="/qa/query.html">Query</a> <a href="/qa/offsite.html">Offsite</a></p>
</body></html>
`;

function mainPages(otherUrl: string): Record<string, string> {
  return {
    "/qa/index.html": page("QA home", `<p>Welcome to the quality assurance fixture. Every link here is archived.</p><img src="/qa/logo.png" width="200" height="120" alt="logo">`),
    "/qa/whole.html": page("Whole page", `<p>This page and all it loads are in the archive.</p><ul>${Array.from({ length: 8 }, (_, i) => `<li>Item ${i + 1} of the whole page</li>`).join("")}</ul><img src="/qa/logo.png" width="200" height="120" alt="logo">`),
    "/qa/random.html": page("Random page", `<div id="content">Loading...</div>
<script>
fetch("/qa/content/" + Math.random().toString(36).slice(2) + ".json")
  .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
  .then(function (data) { var el = document.getElementById("content"); el.innerText = data.text; el.style.minHeight = "600px"; el.style.background = "#2a4d69"; el.style.color = "#fff"; });
</script>`),
    "/qa/query.html": page("Query page", `<div id="content">Loading...</div>
<script>
fetch("/qa/content.json?r=" + Math.random().toString(36).slice(2))
  .then(function (r) { return r.json(); })
  .then(function (data) { document.getElementById("content").innerText = data.text; });
</script>`),
    "/qa/offsite.html": page("Offsite image", `<p>A banner from another host follows.</p><img src="${otherUrl}/banner.png" width="900" height="400" alt="banner">`),
  };
}

async function listen(server: http.Server, host: string): Promise<string> {
  await new Promise<void>((done, fail) => {
    server.once("error", fail);
    server.listen(0, host, () => done());
  });
  return `http://${host}:${(server.address() as AddressInfo).port}`;
}

export async function startQaSite(): Promise<QaSite> {
  const requests = { main: [] as string[], other: [] as string[] };
  const other = http.createServer((req, res) => {
    requests.other.push(`${req.method} ${req.url}`);
    if (req.url === "/banner.png") res.writeHead(200, { "Content-Type": "image/png", "Content-Length": BANNER.length }).end(BANNER);
    else res.writeHead(404).end();
  });
  const otherUrl = await listen(other, "127.0.0.2");
  const pages = mainPages(otherUrl);
  const main = http.createServer((req, res) => {
    requests.main.push(`${req.method} ${req.url}`);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const send = (type: string, body: string | Buffer) => res.writeHead(200, { "Content-Type": type, "Content-Length": Buffer.byteLength(body) }).end(body);
    if (pages[path]) return send("text/html; charset=utf-8", pages[path]);
    if (path === "/qa/style.css") return send("text/css", "body { font-family: sans-serif; background: #fffbe8; } h1 { color: #225; }");
    if (path === "/qa/logo.png") return send("image/png", LOGO);
    if (path === "/qa/content.json" || /^\/qa\/content\/[a-z0-9]+\.json$/.test(path)) return send("application/json", JSON.stringify({ text: RANDOM_CONTENT }));
    res.writeHead(404).end();
  });
  const url = await listen(main, "127.0.0.1");
  const close = (server: http.Server) => new Promise<void>((done) => {
    server.close(() => done());
    server.closeAllConnections();
  });
  return { url, otherUrl, requests, close: async () => void (await Promise.all([close(main), close(other)])) };
}
