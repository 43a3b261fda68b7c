/**
 * Tests of the test infrastructure itself:
 *  - the fixture website server (fixtures/server.ts) and the consistency of
 *    its manifest (fixtures/site-manifest.ts) with the served files;
 *  - the ReplayWeb.page replay harness (test/helpers/replay.ts), validated
 *    with hand-built minimal WACZ files (single and multi-WACZ JSON);
 *  - the media site (fixtures/mediaSite.ts): its catalog, content types, ranges,
 *    live window, and players that pick 320x180 live.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import puppeteer from "puppeteer-core";
import { CDXIndexer, WARCRecord, WARCSerializer } from "warcio";
import yazl from "yazl";
import { DRM_KEY_LINE, livePlaylist, startMediaSite, type MediaSite } from "../fixtures/mediaSite.js";
import { findFixturesRoot, startFixtureServer, type FixtureServer } from "../fixtures/server.js";
import {
  DUPLICATE_PAYLOAD_PATHS,
  EXPECTED_PAGE_PATHS,
  EXPECTED_RESOURCE_PATHS,
  OFFSCOPE_PATHS,
  SCOPE_PREFIX,
  SCRIPT_LOADED_TEXT,
  SEED_PATH,
  SITE_PAGES,
  expectedPage,
  fixtureUrl,
} from "../fixtures/site-manifest.js";
import { BROWSER_ARGS, closeBrowser, detectReplayFailure, replayPage, startReplayServer, type ReplayServer } from "./helpers/replay.js";

const execFileAsync = promisify(execFile);

// ---------------------------------------------------------------------------
// Raw HTTP helper (no redirect following, no automatic decompression)

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function rawGet(url: string, headers: Record<string, string> = {}, method = "GET"): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

function siteFile(...parts: string[]): Promise<Buffer> {
  return readFile(path.join(findFixturesRoot(), ...parts));
}

function titleOf(html: string): string | null {
  const m = /<title>([^<]*)<\/title>/i.exec(html);
  return m ? (m[1] ?? "").trim() : null;
}

/** In-scope / off-scope page links of an HTML document, normalized like a crawler would. */
function extractLinks(html: string, pageUrl: string): { inScope: string[]; offScope: string[] } {
  const inScope = new Set<string>();
  const offScope = new Set<string>();
  for (const m of html.matchAll(/<a\s[^>]*href="([^"]*)"/gi)) {
    let u: URL;
    try {
      u = new URL(m[1] ?? "", pageUrl);
    } catch {
      continue;
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") continue;
    u.hash = "";
    const p = u.pathname + u.search;
    (p.startsWith(SCOPE_PREFIX) ? inScope : offScope).add(p);
  }
  return { inScope: [...inScope], offScope: [...offScope] };
}

// ---------------------------------------------------------------------------
// Fixture server

describe("fixture server", () => {
  let server: FixtureServer;

  beforeAll(async () => {
    server = await startFixtureServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("runs standalone when compiled: prints {url} and stops on SIGTERM", async () => {
    const repo = path.resolve(findFixturesRoot(), "..");
    const outDir = path.join(repo, ".cache", "fixture-server-build");
    await rm(outDir, { recursive: true, force: true });
    await execFileAsync(
      process.execPath,
      [
        path.join(repo, "node_modules", "typescript", "bin", "tsc"),
        "--module", "NodeNext", "--moduleResolution", "NodeNext", "--target", "ES2022", "--strict",
        "--skipLibCheck", "--types", "node", "--rootDir", repo, "--outDir", outDir,
        path.join(repo, "fixtures", "server.ts"),
      ],
      { cwd: repo },
    );
    // A free port to pass with --port.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));

    const child = spawn(process.execPath, [path.join(outDir, "fixtures", "server.js"), "--port", String(port)], { stdio: ["ignore", "pipe", "pipe"] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let buf = "";
        child.stdout.on("data", (d: Buffer) => {
          buf += d.toString("utf-8");
          const nl = buf.indexOf("\n");
          if (nl >= 0) resolve(buf.slice(0, nl));
        });
        child.on("exit", (code) => reject(new Error(`server exited early with ${String(code)}`)));
      });
      const info = JSON.parse(line) as { url: string };
      expect(info.url).toBe(`http://127.0.0.1:${port}`);
      const res = await rawGet(info.url + SEED_PATH);
      expect(res.status).toBe(200);
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      await rm(outDir, { recursive: true, force: true });
    }
  });

  it("listens on 127.0.0.1 and serves the seed", async () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    const res = await rawGet(server.url + SEED_PATH);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(titleOf(res.body.toString("utf-8"))).toBe("Fixture Home");
  });

  it("redirects /site/old-page.html with 301 to /site/about.html", async () => {
    const res = await rawGet(server.url + "/site/old-page.html");
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe("/site/about.html");
  });

  it("answers 404 with a small HTML body for unknown paths", async () => {
    for (const p of ["/site/missing.html", "/nope", "/", "/server.ts", "/site-manifest.ts", "/site/%2e%2e/server.ts"]) {
      const res = await rawGet(server.url + p);
      expect(res.status, p).toBe(404);
    }
    const res = await rawGet(server.url + "/site/missing.html");
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(titleOf(res.body.toString("utf-8"))).toBe("404 Not Found");
  });

  it("serves /site/gz/compressed.html gzip-encoded", async () => {
    const res = await rawGet(server.url + "/site/gz/compressed.html", { "Accept-Encoding": "gzip" });
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(Number(res.headers["content-length"])).toBe(res.body.length);
    const html = gunzipSync(res.body);
    expect(html.equals(await siteFile("site", "gz", "compressed.html"))).toBe(true);
    expect(html.toString("utf-8")).toContain("GZIP-PAGE-MARKER");
    // Always gzip, even without Accept-Encoding.
    const plain = await rawGet(server.url + "/site/gz/compressed.html");
    expect(plain.headers["content-encoding"]).toBe("gzip");
  });

  it("gzips CSS only when the client accepts gzip", async () => {
    const gz = await rawGet(server.url + "/site/css/style.css", { "Accept-Encoding": "gzip, deflate" });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.body).equals(await siteFile("site", "css", "style.css"))).toBe(true);
    const plain = await rawGet(server.url + "/site/css/style.css");
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.headers["content-type"]).toBe("text/css; charset=utf-8");
  });

  it("streams /site/stream/chunked.html chunked without Content-Length", async () => {
    const res = await rawGet(server.url + "/site/stream/chunked.html");
    expect(res.status).toBe(200);
    expect(res.headers["content-length"]).toBeUndefined();
    expect(res.headers["transfer-encoding"]).toBe("chunked");
    expect(res.body.equals(await siteFile("site", "stream", "chunked.html"))).toBe(true);
  });

  it("answers single byte ranges with 206 and the exact bytes, and counts bytes served", async () => {
    const file = await siteFile("site", "img", "photo.png");
    server.resetCounters();
    const res = await rawGet(server.url + "/site/img/photo.png", { Range: "bytes=10-29" });
    expect(res.status).toBe(206);
    expect(res.headers["content-range"]).toBe(`bytes 10-29/${file.length}`);
    expect(res.headers["content-length"]).toBe("20");
    expect(res.body.equals(file.subarray(10, 30))).toBe(true);
    expect(server.bytesServed).toBe(20);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: "GET", url: "/site/img/photo.png", status: 206 });
    expect(server.requests[0]?.headers.range).toBe("bytes=10-29");

    const suffix = await rawGet(server.url + "/site/img/photo.png", { Range: "bytes=-5" });
    expect(suffix.status).toBe(206);
    expect(suffix.body.equals(file.subarray(file.length - 5))).toBe(true);
    const open = await rawGet(server.url + "/site/img/photo.png", { Range: `bytes=${file.length - 3}-` });
    expect(open.body.equals(file.subarray(file.length - 3))).toBe(true);
    const bad = await rawGet(server.url + "/site/img/photo.png", { Range: `bytes=${file.length}-` });
    expect(bad.status).toBe(416);
    expect(bad.headers["content-range"]).toBe(`bytes */${file.length}`);

    const full = await rawGet(server.url + "/site/img/photo.png");
    expect(full.status).toBe(200);
    expect(full.headers["accept-ranges"]).toBe("bytes");
    expect(full.body.equals(file)).toBe(true);

    server.resetCounters();
    expect(server.bytesServed).toBe(0);
    expect(server.requests).toHaveLength(0);
    const head = await rawGet(server.url + "/site/img/photo.png", {}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String(file.length));
    expect(server.bytesServed).toBe(0);
  });

  it("decodes percent-encoded non-ASCII paths", async () => {
    const res = await rawGet(server.url + "/site/caf%C3%A9.html");
    expect(res.status).toBe(200);
    expect(res.body.toString("utf-8")).toContain("CAFE-PAGE-MARKER");
    expect(new URL("caf%C3%A9.html", server.url + "/site/products.html").pathname).toBe("/site/caf%C3%A9.html");
    expect(new URL("café.html", server.url + "/site/products.html").pathname).toBe("/site/caf%C3%A9.html");
  });

  it("renders the query of /site/search.html", async () => {
    const res = await rawGet(server.url + "/site/search.html?q=archive");
    expect(res.status).toBe(200);
    expect(res.body.toString("utf-8")).toContain('Search results for: <strong id="query">archive</strong>');
    const evil = await rawGet(server.url + "/site/search.html?q=%3Cb%3E");
    expect(evil.body.toString("utf-8")).toContain("&#60;b&#62;");
  });

  it("serves the PDF and identical logo bytes under two URLs", async () => {
    const pdf = await rawGet(server.url + "/site/docs/report.pdf");
    expect(pdf.status).toBe(200);
    expect(pdf.headers["content-type"]).toBe("application/pdf");
    expect(pdf.body.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    const [a, b] = await Promise.all(DUPLICATE_PAYLOAD_PATHS.map((p) => rawGet(server.url + p)));
    expect(a?.status).toBe(200);
    expect(a?.headers["content-type"]).toBe("image/png");
    expect(a?.body.subarray(1, 4).toString("latin1")).toBe("PNG");
    expect(a && b && a.body.equals(b.body)).toBe(true);
  });

  it("returns the status and content type the manifest claims for every page", async () => {
    for (const page of SITE_PAGES) {
      const res = await rawGet(fixtureUrl(server.url, page.path), { "Accept-Encoding": "gzip" });
      expect(res.status, page.path).toBe(page.status);
      expect(String(res.headers["content-type"]).split(";")[0], page.path).toBe(page.contentType);
      if (page.redirectTo) expect(res.headers.location, page.path).toBe(page.redirectTo);
      expect(res.headers["content-encoding"] === "gzip", page.path).toBe(page.gzip === true);
      expect(res.headers["content-length"] === undefined, page.path).toBe(page.chunked === true);
      if (page.status === 200 && page.contentType === "text/html") {
        const html = (page.gzip ? gunzipSync(res.body) : res.body).toString("utf-8");
        expect(titleOf(html), page.path).toBe(page.title);
        const textOnly = html.replace(/<[^>]+>/g, "");
        if (page.marker) expect(textOnly, page.path).toContain(page.marker === SCRIPT_LOADED_TEXT ? "DYNAMIC-PAGE-MARKER" : page.marker);
      }
    }
    expect(EXPECTED_PAGE_PATHS).toEqual(SITE_PAGES.map((p) => p.path));
    for (const p of [...EXPECTED_RESOURCE_PATHS, ...OFFSCOPE_PATHS]) {
      expect((await rawGet(server.url + p)).status, p).toBe(200);
    }
  });

  it("manifest links, depths and page set match a link-following crawl of the served HTML", async () => {
    const depth = new Map<string, number>([[SEED_PATH, 0]]);
    const queue = [SEED_PATH];
    const offscope = new Set<string>();
    while (queue.length) {
      const p = queue.shift() ?? "";
      const res = await rawGet(fixtureUrl(server.url, p), { "Accept-Encoding": "identity" });
      let finalUrl = fixtureUrl(server.url, p);
      let body = res.body;
      if (res.status === 301 && res.headers.location) {
        finalUrl = new URL(res.headers.location, finalUrl).href;
        body = (await rawGet(finalUrl)).body;
      }
      const encoding = res.status === 301 ? undefined : res.headers["content-encoding"];
      const html = String(res.headers["content-type"]).startsWith("text/html") || res.status === 301
        ? (encoding === "gzip" ? gunzipSync(body) : body).toString("utf-8")
        : "";
      const links = extractLinks(html, finalUrl);
      const page = expectedPage(p);
      expect(page, p).toBeDefined();
      expect([...links.inScope].sort(), p).toEqual([...(page?.links ?? [])].sort());
      expect([...links.offScope].sort(), p).toEqual([...(page?.offscopeLinks ?? [])].sort());
      links.offScope.forEach((o) => offscope.add(o));
      for (const l of links.inScope) {
        if (!depth.has(l)) {
          depth.set(l, (depth.get(p) ?? 0) + 1);
          queue.push(l);
        }
      }
    }
    expect([...depth.keys()].sort()).toEqual([...EXPECTED_PAGE_PATHS].sort());
    for (const page of SITE_PAGES) expect(depth.get(page.path), page.path).toBe(page.depth);
    expect([...offscope].sort()).toEqual([...OFFSCOPE_PATHS].sort());
  });

  it("manifest resources match what Chromium requests when loading each page", async () => {
    const userDataDir = await mkdtemp(path.join(os.tmpdir(), "fixture-profile-"));
    const browser = await puppeteer.launch({
      executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium",
      headless: true,
      userDataDir,
      args: [...BROWSER_ARGS],
    });
    try {
      const page = await browser.newPage();
      await page.setCacheEnabled(false);
      const union = new Set<string>();
      for (const expected of SITE_PAGES) {
        if (expected.contentType !== "text/html") continue;
        const pageUrl = fixtureUrl(server.url, expected.path);
        server.resetCounters();
        const resp = await page.goto(pageUrl, { waitUntil: "networkidle0" });
        expect(resp?.status(), expected.path).toBe(expected.redirectTo ? 200 : expected.status);
        expect(await page.title(), expected.path).toBe(expected.title);
        if (expected.marker) {
          const text = await page.evaluate(() => document.body.innerText);
          expect(text, expected.path).toContain(expected.marker);
        }
        const seen = new Set(server.requests.map((r) => new URL(r.url, server.url).pathname + new URL(r.url, server.url).search));
        seen.delete(expected.path);
        if (expected.redirectTo) seen.delete(expected.redirectTo);
        expect([...seen].sort(), expected.path).toEqual([...expected.resources].sort());
        expected.resources.forEach((r) => union.add(r));
      }
      expect([...union].sort()).toEqual([...EXPECTED_RESOURCE_PATHS].sort());
    } finally {
      await closeBrowser(browser);
      await rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    }
  });
});

// ---------------------------------------------------------------------------
// Minimal WACZ builder (test-only; the real writer lives in src/wacz/)

interface ArchivedResource {
  url: string;
  body: string | Buffer;
  contentType: string;
  /** HTTP status line; default "HTTP/1.1 200 OK". */
  statusline?: string;
  /** Extra HTTP response headers (e.g. Location). */
  headers?: Record<string, string>;
  /** Listed in pages/pages.jsonl when set. */
  pageTitle?: string;
}

const CAPTURE_DATE = "2024-05-01T12:00:00Z";

function sha256(buf: Buffer): string {
  return "sha256:" + createHash("sha256").update(buf).digest("hex");
}

async function* once(buf: Uint8Array): AsyncGenerator<Uint8Array> {
  yield buf;
}

async function buildWarc(resources: ArchivedResource[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const r of resources) {
    const payload = typeof r.body === "string" ? Buffer.from(r.body, "utf-8") : r.body;
    const record = WARCRecord.create(
      {
        url: r.url,
        date: CAPTURE_DATE,
        type: "response",
        warcVersion: "WARC/1.1",
        httpHeaders: { "Content-Type": r.contentType, "Content-Length": String(payload.length), ...r.headers },
        statusline: r.statusline ?? "HTTP/1.1 200 OK",
      },
      once(payload),
    );
    parts.push(Buffer.from(await WARCSerializer.serialize(record, { gzip: true })));
  }
  return Buffer.concat(parts);
}

async function buildCdxj(warc: Buffer, filename: string): Promise<Buffer> {
  const indexer = new CDXIndexer({ format: "cdxj" });
  const lines: string[] = [];
  for await (const entry of indexer.iterIndex([{ filename, reader: once(warc) }])) {
    lines.push(indexer.serializeCDXJ(entry));
  }
  lines.sort();
  return Buffer.from(lines.join(""), "utf-8");
}

async function writeWacz(outPath: string, resources: ArchivedResource[]): Promise<void> {
  const warc = await buildWarc(resources);
  const cdxj = await buildCdxj(warc, "data.warc.gz");
  const pageLines = [JSON.stringify({ format: "json-pages-1.0", id: "pages", title: "All Pages" })];
  for (const r of resources) {
    if (r.pageTitle !== undefined) pageLines.push(JSON.stringify({ url: r.url, ts: CAPTURE_DATE, title: r.pageTitle }));
  }
  const pages = Buffer.from(pageLines.join("\n") + "\n", "utf-8");
  const entries: [string, Buffer][] = [
    ["archive/data.warc.gz", warc],
    ["indexes/index.cdxj", cdxj],
    ["pages/pages.jsonl", pages],
  ];
  const datapackage = Buffer.from(
    JSON.stringify(
      {
        profile: "data-package",
        wacz_version: "1.1.1",
        created: CAPTURE_DATE,
        software: "fixtures.test.ts minimal WACZ builder",
        resources: entries.map(([p, buf]) => ({ name: path.basename(p), path: p, hash: sha256(buf), bytes: buf.length })),
      },
      null,
      2,
    ),
    "utf-8",
  );
  entries.push(["datapackage.json", datapackage]);

  const zip = new yazl.ZipFile();
  for (const [p, buf] of entries) zip.addBuffer(buf, p, { compress: false });
  zip.end();
  await new Promise<void>((resolve, reject) => {
    const out = createWriteStream(outPath);
    out.on("close", () => resolve());
    out.on("error", reject);
    zip.outputStream.on("error", reject);
    zip.outputStream.pipe(out);
  });
}

// ---------------------------------------------------------------------------
// Replay harness

describe("replay harness (ReplayWeb.page)", () => {
  // Archived URLs: never fetched live, ReplayWeb.page serves them from the WACZ.
  const base = "http://127.0.0.1:8123";
  const pageUrl = `${base}/handmade/index.html`;
  const cafeUrl = `${base}/handmade/caf%C3%A9.html`;
  let archiveDir: string;
  let replay: ReplayServer;

  beforeAll(async () => {
    archiveDir = await mkdtemp(path.join(os.tmpdir(), "replay-archives-"));
    await writeWacz(path.join(archiveDir, "single.wacz"), [
      {
        url: pageUrl,
        contentType: "text/html; charset=utf-8",
        pageTitle: "Handmade Archive Page",
        body:
          '<!doctype html><html><head><meta charset="utf-8"><title>Handmade Archive Page</title></head><body>' +
          "<h1>HANDMADE-WACZ-MARKER</h1><ul id=\"items\"></ul>" +
          "<script>setTimeout(function () { fetch('items.json').then(function (r) { return r.json(); }).then(function (d) {" +
          "var li = document.createElement('li'); li.textContent = 'Loaded by script: ' + d.items.map(function (i) { return i.name; }).join(', ');" +
          "document.getElementById('items').appendChild(li); }); }, 300);</script></body></html>",
      },
      {
        url: `${base}/handmade/items.json`,
        contentType: "application/json",
        body: JSON.stringify({ items: [{ name: "alpha" }, { name: "beta" }] }),
      },
      {
        url: cafeUrl,
        contentType: "text/html; charset=utf-8",
        pageTitle: "Café Handmade",
        body: '<!doctype html><html><head><meta charset="utf-8"><title>Café Handmade</title></head><body><p>CAFE-WACZ-MARKER</p></body></html>',
      },
    ]);
    await writeWacz(path.join(archiveDir, "redirect.wacz"), [
      {
        url: `${base}/handmade/old.html`,
        contentType: "text/html; charset=utf-8",
        statusline: "HTTP/1.1 301 Moved Permanently",
        headers: { Location: pageUrl },
        pageTitle: "Old",
        body: "<html><body>Moved</body></html>",
      },
      {
        url: pageUrl,
        contentType: "text/html; charset=utf-8",
        body: '<!doctype html><html><head><title>Redirect Target</title></head><body><p>REDIRECT-TARGET-MARKER</p></body></html>',
      },
    ]);
    await writeWacz(path.join(archiveDir, "part-a.wacz"), [
      {
        url: `${base}/multi/a.html`,
        contentType: "text/html; charset=utf-8",
        pageTitle: "Multi A",
        body: "<!doctype html><html><head><title>Multi A</title></head><body><p>MULTI-PART-A-MARKER</p></body></html>",
      },
    ]);
    await writeWacz(path.join(archiveDir, "part-b.wacz"), [
      {
        url: `${base}/multi/b.html`,
        contentType: "text/html; charset=utf-8",
        pageTitle: "Multi B",
        body: "<!doctype html><html><head><title>Multi B</title></head><body><p>MULTI-PART-B-MARKER</p></body></html>",
      },
    ]);
    const resources = [];
    for (const name of ["part-a.wacz", "part-b.wacz"]) {
      const buf = await readFile(path.join(archiveDir, name));
      resources.push({ name, path: name, hash: sha256(buf), size: buf.length });
    }
    await writeFile(path.join(archiveDir, "multi.json"), JSON.stringify({ profile: "multi-wacz-package", resources }, null, 2));
    replay = await startReplayServer(archiveDir);
  });

  afterAll(async () => {
    await replay?.close();
    if (archiveDir) await rm(archiveDir, { recursive: true, force: true });
  });

  it("serves ReplayWeb.page, the embed page and archives with range support", async () => {
    const ui = await rawGet(replay.url + "/ui.js");
    expect(ui.status).toBe(200);
    const sw = await rawGet(replay.url + "/replay/sw.js");
    expect(sw.status).toBe(200);
    expect(sw.headers["content-type"]).toContain("javascript");
    const embed = await rawGet(replay.url + "/embed.html?" + new URLSearchParams({ source: "/archives/single.wacz", url: pageUrl }).toString());
    expect(embed.body.toString("utf-8")).toContain(`source="/archives/single.wacz"`);
    expect(embed.body.toString("utf-8")).toContain('replayBase="/replay/"');
    const wacz = await readFile(path.join(archiveDir, "single.wacz"));
    const part = await rawGet(replay.url + "/archives/single.wacz", { Range: "bytes=0-3" });
    expect(part.status).toBe(206);
    expect(part.headers["content-range"]).toBe(`bytes 0-3/${wacz.length}`);
    expect(part.body.equals(wacz.subarray(0, 4))).toBe(true);
    expect((await rawGet(replay.url + "/archives/../fixtures.test.ts")).status).toBe(404);
  });

  it("replays a page from a single WACZ, including script-fetched content", async () => {
    const result = await replayPage(replay, { source: "/archives/single.wacz", url: pageUrl, waitForText: "Loaded by script: alpha, beta" });
    expect(detectReplayFailure(result.text)).toBeNull();
    expect(result.title).toBe("Handmade Archive Page");
    expect(result.text).toContain("HANDMADE-WACZ-MARKER");
    expect(result.text).toContain("Loaded by script: alpha, beta");
    expect(result.frameUrl).toContain("/replay/w/");
    expect(result.frameUrl).toContain("mp_/");
  });

  it("replays a percent-encoded non-ASCII URL", async () => {
    const result = await replayPage(replay, { source: "/archives/single.wacz", url: cafeUrl });
    expect(detectReplayFailure(result.text)).toBeNull();
    expect(result.title).toBe("Café Handmade");
    expect(result.text).toContain("CAFE-WACZ-MARKER");
  });

  it("replays pages from a multi-WACZ JSON package", async () => {
    const b = await replayPage(replay, { source: "/archives/multi.json", url: `${base}/multi/b.html` });
    expect(detectReplayFailure(b.text)).toBeNull();
    expect(b.text).toContain("MULTI-PART-B-MARKER");
    const a = await replayPage(replay, { source: "/archives/multi.json", url: `${base}/multi/a.html` });
    expect(a.text).toContain("MULTI-PART-A-MARKER");
  });

  it("follows a redirect recorded in the archive", async () => {
    const result = await replayPage(replay, { source: "/archives/redirect.wacz", url: `${base}/handmade/old.html` });
    expect(detectReplayFailure(result.text)).toBeNull();
    expect(result.text).toContain("REDIRECT-TARGET-MARKER");
    expect(result.frameUrl.endsWith("mp_/" + pageUrl)).toBe(true);
  });

  it("reports ReplayWeb.page's not-found page for URLs missing from the archive", async () => {
    const result = await replayPage(replay, {
      source: "/archives/single.wacz",
      url: `${base}/handmade/not-archived.html`,
      waitForText: "never appears",
      timeoutMs: 60_000,
    });
    expect(detectReplayFailure(result.text)).not.toBeNull();
    expect(detectReplayFailure("HANDMADE-WACZ-MARKER")).toBeNull();
  });
});

describe("media site (fixtures/mediaSite.ts)", () => {
  let media: MediaSite;
  beforeAll(async () => {
    media = await startMediaSite();
  }, 120_000);
  afterAll(async () => {
    await media?.close();
  });

  it("serves every path of its catalog with the stream's content type, progressive files whole and in ranges", async () => {
    const { hls, hlsPoster, dash, encrypted, live, progressive } = media.catalog;
    const typed: [string[], string][] = [
      [[hls.master, hlsPoster.master, hls.low.playlist, hls.high.playlist, hls.audio.playlist, hls.subtitles.playlist, encrypted.master, encrypted.playlist, live.playlist], "application/vnd.apple.mpegurl"],
      [[hls.low.init, ...hls.high.segments, ...hlsPoster.low.segments, ...dash.high.segments, dash.low.init, live.init, ...encrypted.segments], "video/mp4"],
      [[hls.audio.init, ...hls.audio.segments, dash.audio.init, ...dash.audio.segments], "audio/mp4"],
      [hls.subtitles.segments, "text/vtt; charset=utf-8"],
      [[dash.mpd], "application/dash+xml"],
    ];
    for (const [paths, contentType] of typed) {
      for (const p of paths) {
        const res = await rawGet(media.url + p);
        expect([p, res.status, res.headers["content-type"]]).toEqual([p, 200, contentType]);
      }
    }
    for (const file of Object.values(progressive)) {
      const whole = await rawGet(media.url + file.path);
      expect([whole.status, whole.headers["content-type"], sha256(whole.body)]).toEqual([200, file.contentType, file.sha256]);
      const part = await rawGet(media.url + file.path, { Range: "bytes=100-199" });
      expect([part.status, part.headers["content-range"], part.body.equals(file.bytes.subarray(100, 200))]).toEqual([206, `bytes 100-199/${file.bytes.length}`, true]);
    }
    expect(media.requests.at(-1)).toEqual({ path: progressive.m4a.path, range: "bytes=100-199" });
  });

  it("lists two video renditions, an audio and a subtitles group in the HLS master, and three Representations in the MPD", async () => {
    const master = (await rawGet(media.url + media.catalog.hls.master)).body.toString("utf8");
    expect(master.match(/RESOLUTION=\d+x\d+/g)).toEqual(["RESOLUTION=320x180", "RESOLUTION=640x360"]);
    expect(master).toContain('TYPE=AUDIO,GROUP-ID="aud"');
    expect(master).toContain('TYPE=SUBTITLES,GROUP-ID="subs"');
    const { low, high, audio } = media.catalog.dash;
    expect([low, high, audio].map((r) => [r.id, r.width, r.height, r.segments.length])).toEqual([["0", 320, 180, 6], ["1", 640, 360, 6], ["2", null, null, 6]]);
    expect(media.catalog.hls.high.segments).toHaveLength(6);
    expect((await rawGet(media.url + media.catalog.encrypted.playlist)).body.toString("utf8")).toContain(DRM_KEY_LINE);
  });

  it("moves the live window every 2 s, with a discontinuity where the looped clip starts again", async () => {
    const segments = (text: string) => text.split("\n").filter((l) => l.startsWith("seg-"));
    expect(segments(livePlaylist(0, 6).text)).toEqual(["seg-0.m4s", "seg-1.m4s", "seg-2.m4s"]);
    const crossing = livePlaylist(9_000, 6).text;
    expect(segments(crossing)).toEqual(["seg-4.m4s", "seg-5.m4s", "seg-6.m4s"]);
    expect(crossing).toContain("#EXT-X-DISCONTINUITY-SEQUENCE:0");
    expect(crossing).toContain("seg-5.m4s\n#EXT-X-DISCONTINUITY\n#EXTINF");
    expect(livePlaylist(12_000, 6).text).toContain("#EXT-X-MEDIA-SEQUENCE:6\n#EXT-X-DISCONTINUITY-SEQUENCE:1\n");
    expect(livePlaylist(12_000, 6).text).not.toContain("#EXT-X-DISCONTINUITY\n");
    const served = (await rawGet(media.url + media.catalog.live.playlist)).body.toString("utf8");
    expect(served).not.toContain("#EXT-X-ENDLIST");
    const last = Number(/seg-(\d+)\.m4s\s*$/.exec(served)?.[1]);
    expect((await rawGet(media.url + media.catalog.live.segmentPath(last))).status).toBe(200);
    expect((await rawGet(media.url + media.catalog.live.segmentPath(last + 5))).status).toBe(404);
  });

  it("its players start at 320x180 live, as many sites configure them (hls.js capped at the player's size, dash.js by its portal)", async () => {
    const browser = await puppeteer.launch({ executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, args: [...BROWSER_ARGS] });
    try {
      for (const pagePath of [media.catalog.pages.hls, media.catalog.pages.dash]) {
        const page = await browser.newPage();
        const from = media.requests.length;
        await page.goto(media.url + pagePath, { waitUntil: "load" });
        await page.waitForFunction(() => (document.querySelector("video")?.currentTime ?? 0) > 1, { timeout: 30_000 });
        const fetched = media.requests.slice(from).map((r) => r.path);
        const [low, high] = pagePath === media.catalog.pages.hls ? [media.catalog.hls.low.init, media.catalog.hls.high.init] : [media.catalog.dash.low.init, media.catalog.dash.high.init];
        expect([pagePath, fetched.includes(low), fetched.includes(high)]).toEqual([pagePath, true, false]);
        await page.close();
      }
    } finally {
      await closeBrowser(browser);
    }
  }, 90_000);
});
