import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { resolve, sep } from "node:path";
import parseRange from "range-parser";
import type { ReplayAssets } from "./replayAssets.js";

/**
 * A loopback HTTP server for ReplayWeb.page: its UI and service worker, the whole app over one collection,
 * a page embedding one archived page, and the archives themselves (with byte ranges: ReplayWeb.page reads a
 * WACZ's zip index and then only the parts it needs).
 *   /ui.js, /sw.js, /replay/ui.js, /replay/sw.js the ReplayWeb.page build
 *   /?source=...                            the app (page list, text search, replay) over `home.source`
 *   /embed.html?source=...&url=...[&ts=...] a page showing one archived page, without ReplayWeb.page's chrome
 *   /replay/__sw_ready.html                 installs the service worker and says when it is active
 *   /archives/<name>                        the archive files, as the archive resolver maps them
 */
export interface ReplayServer {
  /** Base URL without trailing slash, e.g. "http://127.0.0.1:40123". */
  url: string;
  close(): Promise<void>;
}

/** The local file served as /archives/<name>, or null (404). */
export type ArchiveResolver = (name: string) => string | null;

/** Serve the files of a folder (and its subfolders, never above it) as /archives/<relative path>. */
export function folderResolver(folder: string): ArchiveResolver {
  const root = resolve(folder);
  return (name) => {
    const path = resolve(root, name);
    return !name.includes("\0") && path.startsWith(root + sep) ? path : null;
  };
}

/** Where ReplayWeb.page's service worker lives; its scope is /replay/. */
export const SW_PATH = "/replay/sw.js?serveIndex=1";
export const SW_READY_PATH = "/replay/__sw_ready.html";
/** The replayed pages' URLs: /replay/w/<collection>/<timestamp><modifier>/<archived URL>. */
export const REPLAY_PREFIX = "/replay/w/";

const escapeAttr = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The app page at /: it opens the source its URL's ?source= names; `notice` lines are shown above it (e.g. WACZ files missing from the set). */
export interface HomePage {
  notice?: string[];
}

function appHtml(home: HomePage): string {
  const notice = home.notice?.length
    ? `<div id="replay-notice" style="position:fixed;z-index:10;top:0;left:0;right:0;max-height:30vh;overflow:auto;background:#fff3cd;color:#5c4400;font:14px sans-serif;padding:6px 12px;border-bottom:1px solid #c9a227">${home.notice.map((line) => `<div>${escapeAttr(line)}</div>`).join("")}</div>`
    : "";
  return `<!doctype html>
<html class="no-overflow"><head><meta charset="utf-8"><title>replay</title><link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<script src="/ui.js"></script></head>
<body>${notice}<replay-app-main></replay-app-main></body></html>
`;
}

function embedHtml(source: string, url: string, ts: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>replay</title><link rel="icon" href="data:,">
<style>html, body { margin: 0; height: 100%; overflow: hidden; } replay-web-page { display: block; width: 100vw; height: 100vh; }</style>
<script src="/ui.js"></script></head>
<body><replay-web-page source="${escapeAttr(source)}" url="${escapeAttr(url)}"${ts ? ` ts="${escapeAttr(ts)}"` : ""} replayBase="/replay/" embed="replayonly"></replay-web-page></body></html>
`;
}

/**
 * <replay-web-page> registers its service worker and at once points its frame at /replay/?source=...:
 * if the worker is not active yet, that request reaches this server and the embed never recovers. So
 * the browser opens this page first; the embed's own registration is then a no-op. Its title says the outcome.
 */
const SW_READY_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>installing</title><link rel="icon" href="data:,"></head>
<body><script>
navigator.serviceWorker.register(${JSON.stringify(SW_PATH)}, { scope: "/replay/" })
  .then(function () { return navigator.serviceWorker.ready; })
  .then(function (reg) {
    var sw = reg.active;
    if (sw && sw.state !== "activated") return new Promise(function (done) { sw.addEventListener("statechange", function () { if (sw.state === "activated") done(); }); });
  })
  .then(function () { document.title = "sw-ready"; }, function (err) { document.title = "sw-error: " + err; });
</script></body></html>
`;

async function serveArchive(req: http.IncomingMessage, res: http.ServerResponse, path: string): Promise<void> {
  const info = await stat(path).catch(() => null);
  if (!info?.isFile()) {
    res.writeHead(404, { "Content-Type": "text/plain" }).end("Not Found\n");
    return;
  }
  const type = path.endsWith(".json") ? "application/json" : path.endsWith(".wacz") ? "application/wacz" : "application/octet-stream";
  const common = { "Content-Type": type, "Accept-Ranges": "bytes", "Cache-Control": "no-store" };
  const ranges = req.headers.range ? parseRange(info.size, req.headers.range) : -2;
  if (ranges === -1) {
    res.writeHead(416, { ...common, "Content-Range": `bytes */${info.size}`, "Content-Length": 0 }).end();
    return;
  }
  // One range is served as asked; none, a malformed header or several ranges get the whole file (RFC 9110 allows it).
  const range = Array.isArray(ranges) && ranges.length === 1 && ranges.type === "bytes" ? ranges[0] : null;
  const start = range?.start ?? 0;
  const end = range?.end ?? info.size - 1;
  const length = info.size === 0 ? 0 : end - start + 1;
  res.writeHead(range ? 206 : 200, { ...common, "Content-Length": length, ...(range ? { "Content-Range": `bytes ${start}-${end}/${info.size}` } : {}) });
  if (req.method === "HEAD" || length === 0) {
    res.end();
    return;
  }
  createReadStream(path, { start, end }).on("error", () => res.destroy()).pipe(res);
}

export interface ReplayServerOptions {
  /** Listen here; default 127.0.0.1. */
  host?: string;
  /** Default: a free port. */
  port?: number;
  /** The app at /: without it, / is not served. */
  home?: HomePage;
  /** Small files served from memory as /archives/<name> (e.g. a multi-WACZ JSON made for this server). */
  inMemory?: Record<string, { type: string; body: Buffer }>;
}

/** Start the server (on 127.0.0.1 and a free port unless told otherwise). */
export async function startReplayServer(assets: Pick<ReplayAssets, "uiJs" | "swJs">, archives: ArchiveResolver, options: ReplayServerOptions = {}): Promise<ReplayServer> {
  const home = options.home;
  const server = http.createServer((req, res) => {
    const send = (status: number, type: string, body: Buffer | string): void => {
      const bytes = typeof body === "string" ? Buffer.from(body) : body;
      res.writeHead(status, { "Content-Type": type, "Content-Length": bytes.length, "Cache-Control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : bytes);
    };
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, "text/plain", "");
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const query = (name: string): string => url.searchParams.get(name) ?? "";
    switch (url.pathname) {
      case "/ui.js":
      case "/replay/ui.js":
        return send(200, "text/javascript; charset=utf-8", assets.uiJs);
      case "/replay/sw.js":
        return send(200, "text/javascript; charset=utf-8", assets.swJs);
      case "/sw.js":
        if (home) return send(200, "text/javascript; charset=utf-8", assets.swJs);
        break;
      case "/":
      case "/index.html":
        if (home) return send(200, "text/html; charset=utf-8", appHtml(home));
        break;
      case "/embed.html":
        return send(200, "text/html; charset=utf-8", embedHtml(query("source"), query("url"), query("ts")));
      case SW_READY_PATH:
        return send(200, "text/html; charset=utf-8", SW_READY_HTML);
    }
    if (!url.pathname.startsWith("/archives/")) return send(404, "text/plain", "Not Found\n");
    let name: string | null = null;
    try {
      name = decodeURIComponent(url.pathname.slice("/archives/".length));
    } catch {
      name = null;
    }
    const held = name === null ? undefined : options.inMemory?.[name];
    if (held) return send(200, held.type, held.body);
    const path = name === null ? null : archives(name);
    if (!path) return send(404, "text/plain", "Not Found\n");
    serveArchive(req, res, path).catch((err: unknown) => {
      if (!res.headersSent) send(500, "text/plain", String(err));
      else res.destroy();
    });
  });
  await new Promise<void>((done, fail) => {
    server.once("error", fail);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => done());
  });
  const { port } = server.address() as AddressInfo;
  // Listening on every address, it is reached on this machine at loopback.
  const host = !options.host || options.host === "0.0.0.0" ? "127.0.0.1" : options.host === "::" ? "::1" : options.host;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
