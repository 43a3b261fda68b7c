// fixtures/behaviorSite.ts
import http2 from "node:http";
import { readFile as readFile2, stat as stat2 } from "node:fs/promises";
import path3 from "node:path";

// fixtures/http-range.ts
import path from "node:path";
function parseRangeHeader(header, size) {
  if (!header) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return null;
  const [, startStr = "", endStr = ""] = m;
  if (startStr === "" && endStr === "") return null;
  if (startStr === "") {
    const n = Number(endStr);
    if (n === 0) return "unsatisfiable";
    if (size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(startStr);
  let end = endStr === "" ? size - 1 : Number(endStr);
  if (endStr !== "" && end < start) return null;
  if (start >= size) return "unsatisfiable";
  if (end >= size) end = size - 1;
  return { start, end };
}
var CONTENT_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".jsonl": "application/x-ndjson; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".xml": "application/xml; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".pdf": "application/pdf",
  ".wacz": "application/wacz",
  ".zip": "application/zip",
  ".warc": "application/warc",
  ".gz": "application/gzip",
  ".cdxj": "text/plain; charset=utf-8"
};
function contentTypeFor(filePath) {
  return CONTENT_TYPES[path.extname(filePath).toLowerCase()] ?? "application/octet-stream";
}

// fixtures/server.ts
import http from "node:http";

// fixtures/loopback.ts
async function listenOnLoopback(server, port = 0) {
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address().port;
  return {
    port: bound,
    url: `http://127.0.0.1:${bound}`,
    close: () => new Promise((resolve, reject) => {
      server.close((err) => err ? reject(err) : resolve());
      server.closeAllConnections();
    })
  };
}

// fixtures/server.ts
import { existsSync, realpathSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import path2 from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
var FIXTURE_REDIRECTS = {
  "/site/old-page.html": "/site/about.html"
};
var CUT_OFF_DECLARED_LENGTH = 1e5;
var CUT_OFF_SENT_LENGTH = 512;
function cutOffPageHead(path4) {
  const head = `<!doctype html>
<html><head><meta charset="utf-8"><title>Cut off ${path4}</title><link rel="icon" href="data:,"></head>
<body><p>CUT-OFF-PAGE-MARKER</p>
<p>`;
  return Buffer.from(head.padEnd(CUT_OFF_SENT_LENGTH, "x"), "utf-8");
}
var CHUNK_DELAY_MS = 15;
var CHUNK_COUNT = 3;
function findFixturesRoot() {
  let dir = path2.dirname(fileURLToPath(import.meta.url));
  for (; ; ) {
    if (existsSync(path2.join(dir, "fixtures", "site", "index.html"))) {
      return path2.join(dir, "fixtures");
    }
    const parent = path2.dirname(dir);
    if (parent === dir) {
      throw new Error(`fixtures/site not found above ${path2.dirname(fileURLToPath(import.meta.url))}`);
    }
    dir = parent;
  }
}
function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
function notFoundBody(target) {
  return Buffer.from(
    `<!doctype html>
<html><head><meta charset="utf-8"><title>404 Not Found</title><link rel="icon" href="data:,"></head>
<body><h1>Not Found</h1><p>The requested URL ${escapeHtml(target)} was not found on this fixture server.</p>
<p><a href="/site/index.html">Fixture home</a></p></body></html>
`,
    "utf-8"
  );
}
function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
function decodeSegments(pathname) {
  const parts = pathname.split("/").slice(1);
  const out = [];
  for (const raw of parts) {
    let seg;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (seg.includes("/") || seg.includes("\\") || seg.includes("\0")) return null;
    if (seg === "..") return null;
    out.push(seg);
  }
  return out;
}
var FixtureServerImpl = class {
  url = "";
  port = 0;
  bytesServed = 0;
  requests = [];
  root;
  cutOffServed = /* @__PURE__ */ new Set();
  server;
  constructor(root) {
    this.root = root;
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        if (!res.headersSent) {
          const body = Buffer.from(`Internal error: ${String(err)}
`);
          this.send(req, res, 500, { "Content-Type": "text/plain; charset=utf-8" }, body);
        } else {
          res.destroy();
        }
      });
    });
    this.server.keepAliveTimeout = 2e3;
  }
  resetCounters() {
    this.bytesServed = 0;
    this.requests.length = 0;
  }
  async listen(port) {
    const listener = await listenOnLoopback(this.server, port);
    this.port = listener.port;
    this.url = listener.url;
  }
  close() {
    return new Promise((resolve, reject) => {
      this.server.close((err) => err ? reject(err) : resolve());
      this.server.closeAllConnections();
    });
  }
  record(req, status) {
    this.requests.push({
      method: req.method ?? "GET",
      url: req.url ?? "",
      status,
      headers: { ...req.headers }
    });
  }
  /** Send a complete response with Content-Length and count its body bytes. */
  send(req, res, status, headers, body) {
    this.record(req, status);
    res.writeHead(status, { "Cache-Control": "no-store", ...headers, "Content-Length": body.length });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    this.bytesServed += body.length;
    res.end(body);
  }
  async handle(req, res) {
    const target = req.url ?? "/";
    const method = req.method ?? "GET";
    if (method !== "GET" && method !== "HEAD") {
      this.send(req, res, 405, { Allow: "GET, HEAD", "Content-Type": "text/plain; charset=utf-8" }, Buffer.from("Method Not Allowed\n"));
      return;
    }
    let parsed;
    try {
      parsed = new URL(target, "http://127.0.0.1");
    } catch {
      this.send(req, res, 400, { "Content-Type": "text/plain; charset=utf-8" }, Buffer.from("Bad Request\n"));
      return;
    }
    const segments = decodeSegments(parsed.pathname);
    if (!segments) {
      this.send(req, res, 400, { "Content-Type": "text/plain; charset=utf-8" }, Buffer.from("Bad Request\n"));
      return;
    }
    const decodedPath = "/" + segments.join("/");
    if (decodedPath === "/cut/page.html" || decodedPath === "/cut/once.html") {
      const cut = decodedPath === "/cut/page.html" || !this.cutOffServed.has(decodedPath);
      this.cutOffServed.add(decodedPath);
      this.sendCutOff(req, res, decodedPath, cut);
      return;
    }
    const redirect = FIXTURE_REDIRECTS[decodedPath];
    if (redirect !== void 0) {
      const body2 = Buffer.from(
        `<!doctype html>
<html><head><title>301 Moved Permanently</title></head><body><h1>Moved Permanently</h1><p>The document has moved <a href="${escapeHtml(redirect)}">here</a>.</p></body></html>
`
      );
      this.send(req, res, 301, { Location: redirect, "Content-Type": "text/html; charset=utf-8" }, body2);
      return;
    }
    const notFound = () => {
      this.send(req, res, 404, { "Content-Type": "text/html; charset=utf-8" }, notFoundBody(target));
    };
    if (segments.length < 2 || segments.some((s) => s.startsWith("."))) {
      notFound();
      return;
    }
    let filePath = path2.join(this.root, ...segments);
    const rel = path2.relative(this.root, filePath);
    if (rel.startsWith("..") || path2.isAbsolute(rel)) {
      notFound();
      return;
    }
    let info = await stat(filePath).catch(() => null);
    if (info?.isDirectory()) {
      if (!parsed.pathname.endsWith("/")) {
        const location = parsed.pathname + "/" + parsed.search;
        this.send(req, res, 301, { Location: location, "Content-Type": "text/plain; charset=utf-8" }, Buffer.from(`Moved to ${location}
`));
        return;
      }
      filePath = path2.join(filePath, "index.html");
      info = await stat(filePath).catch(() => null);
    }
    if (!info?.isFile()) {
      notFound();
      return;
    }
    const relPosix = path2.relative(this.root, filePath).split(path2.sep).join("/");
    const contentType = contentTypeFor(filePath);
    let body = await readFile(filePath);
    if (relPosix === "site/search.html") {
      const q = parsed.searchParams.get("q") ?? "";
      const html = body.toString("utf-8").replaceAll("{{QUERY}}", escapeHtml(q === "" ? "(no query)" : q));
      this.send(req, res, 200, { "Content-Type": contentType }, Buffer.from(html, "utf-8"));
      return;
    }
    if (relPosix.startsWith("site/stream/")) {
      await this.sendChunked(req, res, contentType, body);
      return;
    }
    const acceptEncoding = String(req.headers["accept-encoding"] ?? "");
    const acceptsGzip = /\bgzip\b/i.test(acceptEncoding);
    const forceGzip = relPosix.startsWith("site/gz/");
    const gzip = forceGzip || relPosix.endsWith(".css") && acceptsGzip && !req.headers.range;
    const caching = {};
    if (!contentType.startsWith("text/html")) {
      const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 16)}${gzip ? "-gz" : ""}"`;
      caching["Cache-Control"] = "no-cache";
      caching.ETag = etag;
      const ifNoneMatch = req.headers["if-none-match"];
      if (ifNoneMatch && ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)) {
        this.record(req, 304);
        res.writeHead(304, caching).end();
        return;
      }
    }
    if (gzip) {
      body = gzipSync(body);
      this.send(req, res, 200, { "Content-Type": contentType, "Content-Encoding": "gzip", Vary: "Accept-Encoding", ...caching }, body);
      return;
    }
    const range = parseRangeHeader(req.headers.range, body.length);
    if (range === "unsatisfiable") {
      this.send(
        req,
        res,
        416,
        { "Content-Type": "text/plain; charset=utf-8", "Content-Range": `bytes */${body.length}`, "Accept-Ranges": "bytes" },
        Buffer.from("Range Not Satisfiable\n")
      );
      return;
    }
    if (range) {
      const part = body.subarray(range.start, range.end + 1);
      this.send(
        req,
        res,
        206,
        { "Content-Type": contentType, "Accept-Ranges": "bytes", "Content-Range": `bytes ${range.start}-${range.end}/${body.length}`, ...caching },
        part
      );
      return;
    }
    this.send(req, res, 200, { "Content-Type": contentType, "Accept-Ranges": "bytes", ...caching }, body);
  }
  /** A long page: whole, or cut off after its first bytes by closing the connection. */
  sendCutOff(req, res, path4, cut) {
    const head = cutOffPageHead(path4);
    const whole = Buffer.concat([head, Buffer.alloc(CUT_OFF_DECLARED_LENGTH - head.length, "y"), Buffer.from("</p></body></html>\n")]).subarray(0, CUT_OFF_DECLARED_LENGTH);
    if (!cut) {
      this.send(req, res, 200, { "Content-Type": "text/html; charset=utf-8" }, whole);
      return;
    }
    this.record(req, 200);
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Content-Length": CUT_OFF_DECLARED_LENGTH });
    this.bytesServed += head.length;
    res.write(head, () => setTimeout(() => res.destroy(), 50));
  }
  /** Stream `body` in CHUNK_COUNT writes with no Content-Length (chunked on HTTP/1.1). */
  async sendChunked(req, res, contentType, body) {
    this.record(req, 200);
    res.writeHead(200, { "Content-Type": contentType, "Cache-Control": "no-store" });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    res.flushHeaders();
    const size = Math.ceil(body.length / CHUNK_COUNT);
    for (let off = 0; off < body.length; off += size) {
      if (res.destroyed) return;
      const piece = body.subarray(off, off + size);
      this.bytesServed += piece.length;
      res.write(piece);
      if (off + size < body.length) await sleep(CHUNK_DELAY_MS);
    }
    res.end();
  }
};
async function startFixtureServer(opts = {}) {
  const root = path2.resolve(opts.root ?? findFixturesRoot());
  const server = new FixtureServerImpl(root);
  await server.listen(opts.port ?? 0);
  return server;
}
function parsePortArg(argv) {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    let value;
    if (a === "--port") value = argv[i + 1];
    else if (a.startsWith("--port=")) value = a.slice("--port=".length);
    else continue;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > 65535) {
      throw new Error(`invalid --port value: ${String(value)}`);
    }
    return n;
  }
  return 0;
}
function isMainModule() {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}
async function main() {
  const server = await startFixtureServer({ port: parsePortArg(process.argv.slice(2)) });
  process.stdout.write(JSON.stringify({ url: server.url }) + "\n");
  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    server.close().then(
      () => process.exit(0),
      () => process.exit(1)
    );
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}
if (isMainModule()) {
  main().catch((err) => {
    process.stderr.write(`fixture server failed: ${err instanceof Error ? err.message : String(err)}
`);
    process.exit(1);
  });
}

// fixtures/behaviorSite.ts
var FEED_PAGES = 5;
var FEED_ITEMS_PER_PAGE = 12;
var SLOW_FEED_DELAY_MS = 800;
function feedItemText(page, item) {
  return `Feed item ${page}.${item}`;
}
var NEWS_ADS_LOADED = [1, 2, 3].flatMap((slot) => ["slot.html", "creative.html", "ad.svg", "inner.html", "pixel.svg"].map((file) => `/ads/${file}?slot=${slot}`));
var ONLY_WITH_BEHAVIORS = [
  ...Array.from({ length: FEED_PAGES - 1 }, (_, i) => `/api/feed?page=${i + 2}`),
  ...Array.from({ length: FEED_PAGES - 1 }, (_, i) => `/api/feed?page=${i + 2}&feed=b`),
  "/img/srcset-2x.svg",
  "/img/srcset-3x.svg",
  "/img/picture-wide-1x.svg",
  "/img/picture-wide-2x.svg",
  "/img/io-1.svg",
  "/img/io-2.svg",
  "/img/io-3.svg",
  "/media/tone.wav",
  "/media/clip.webm"
];
var MEDIA_TYPES = { ".wav": "audio/wav", ".webm": "video/webm" };
async function startBehaviorSite() {
  const root = path3.join(findFixturesRoot(), "behaviors");
  const requests = [];
  const server = http2.createServer((req, res) => {
    const target = req.url ?? "/";
    requests.push(target);
    const send = (status, headers, body) => {
      res.writeHead(status, { "Cache-Control": "no-store", ...headers, "Content-Length": body.length });
      res.end(req.method === "HEAD" ? void 0 : body);
    };
    const notFound = () => send(404, { "Content-Type": "text/plain" }, Buffer.from("not found\n"));
    void (async () => {
      const url2 = new URL(target, "http://127.0.0.1");
      if (url2.pathname === "/api/feed") {
        const page = Number(url2.searchParams.get("page"));
        if (!Number.isInteger(page) || page < 1 || page > FEED_PAGES) return notFound();
        if (url2.searchParams.get("feed") === "slow") await new Promise((resolve) => setTimeout(resolve, SLOW_FEED_DELAY_MS));
        const items = Array.from({ length: FEED_ITEMS_PER_PAGE }, (_, i) => feedItemText(page, i + 1));
        return send(200, { "Content-Type": "application/json" }, Buffer.from(JSON.stringify({ page, items, next: page < FEED_PAGES ? page + 1 : null })));
      }
      const file = path3.join(root, ...url2.pathname.split("/").filter(Boolean));
      if (!file.startsWith(root + path3.sep) || url2.pathname.includes("..")) return notFound();
      if (!(await stat2(file).catch(() => null))?.isFile()) return notFound();
      const body = await readFile2(file);
      const type = MEDIA_TYPES[path3.extname(file)] ?? contentTypeFor(file);
      const range = parseRangeHeader(req.headers.range, body.length);
      if (range && range !== "unsatisfiable") {
        return send(206, { "Content-Type": type, "Accept-Ranges": "bytes", "Content-Range": `bytes ${range.start}-${range.end}/${body.length}` }, body.subarray(range.start, range.end + 1));
      }
      send(200, { "Content-Type": type, "Accept-Ranges": "bytes" }, body);
    })().catch(() => res.destroy());
  });
  server.keepAliveTimeout = 2e3;
  const { url, close } = await listenOnLoopback(server);
  return { url, requests, close };
}

// test/helpers/cli.ts
import { spawn } from "node:child_process";
import { fileURLToPath as fileURLToPath2 } from "node:url";
var ROOT = fileURLToPath2(new URL("../../", import.meta.url));
var ENTRIES = { crawl: "dist/src/cli/crawl.js", indexer: "dist/indexer/cli.js", history: "dist/src/cli/history.js", "create-login-profile": "dist/src/cli/createLoginProfile.js", qa: "dist/src/cli/qa.js", replay: "dist/src/cli/replay.js" };
function runCli(program, args, opts = {}) {
  const entry = ENTRIES[program];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry, ...args], { cwd: ROOT, env: { ...process.env, ...opts.env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => stdout += d.toString());
    child.stderr.on("data", (d) => stderr += d.toString());
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 18e4);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// ../../tmp/news.ts
import { writeFileSync, mkdtempSync } from "node:fs";
var site = await startBehaviorSite();
var runs = await Promise.all([1, 2, 3].map(async (i) => {
  const cwd = mkdtempSync("/tmp/news-");
  const r = await runCli("crawl", ["--url", site.url + "/news/index.html", "--collection", "news", "--cwd", cwd, "--netIdleWait", "3", "--logLevel", "debug"], { timeoutMs: 3e5 });
  writeFileSync(`/tmp/news-run${i}.log`, r.stderr);
  const t = r.stderr.split("\n").find((l) => l.includes('"page timings"') && l.includes("index.html"));
  return `${i} code=${r.code} ${t?.slice(0, 300)}`;
}));
console.log(runs.join("\n"));
await site.close();
