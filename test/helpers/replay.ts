/**
 * Replay harness: loads a WACZ (or a multi-WACZ JSON package) into the real
 * ReplayWeb.page (prebuilt ui.js + sw.js from `bash scripts/fetch-replay.sh`,
 * cached in .cache/replaywebpage/) in headless Chromium and reads back the
 * replayed page's title and text.
 *
 *   const server = await startReplayServer(dirWithArchives);
 *   const { title, text } = await replayPage(server, { source: "/archives/x.wacz", url: "http://127.0.0.1:1234/site/index.html" });
 *   await server.close();
 *
 * Every replayPage() call launches its own browser with a fresh, temporary
 * user-data-dir (service-worker caches and IndexedDB do not leak between
 * calls) and closes/deletes both before returning.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, stat, open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import puppeteer, { type Browser, type Frame, type Page } from "puppeteer-core";
import { contentTypeFor, parseRangeHeader } from "../../fixtures/http-range.js";

const execFileAsync = promisify(execFile);

export interface ReplayServer {
  /** Base URL without trailing slash, e.g. "http://127.0.0.1:40123". */
  url: string;
  close(): Promise<void>;
}

export interface ReplayPageOptions {
  /** Archive to load, as served by the replay server: "/archives/<file>.wacz" or "/archives/<file>.json" (multi-WACZ). */
  source: string;
  /** The archived (original) URL to replay. */
  url: string;
  /** Keep polling until the replayed body text contains this (script-inserted content appears late). */
  waitForText?: string;
  /** Overall time budget, including browser start-up and archive loading. Default 60 s. */
  timeoutMs?: number;
  /** Keep polling until every <img> of the replayed page has finished loading (or failed). */
  waitForImages?: boolean;
  /** Scroll the replayed page to its bottom before each poll (infinite-scroll feeds load more then). */
  scroll?: boolean;
}

/** An <img> of the replayed page: naturalWidth is 0 when it failed to load or decode. */
export interface ReplayedImage {
  src: string;
  complete: boolean;
  naturalWidth: number;
}

/** A <link rel=stylesheet> of the replayed page: rules is null when its sheet did not load. */
export interface ReplayedStylesheet {
  href: string;
  rules: number | null;
}

export interface ReplayPageResult {
  /** document.title of the replayed page. */
  title: string;
  /** document.body.innerText of the replayed page. */
  text: string;
  /** URL of the replay frame, e.g. http://127.0.0.1:P/replay/w/<coll>/<ts>mp_/<archived url>. */
  frameUrl: string;
  images: ReplayedImage[];
  stylesheets: ReplayedStylesheet[];
  /** getComputedStyle(document.body).backgroundColor: shows whether the page's CSS applied. */
  bodyBackground: string;
}

/** Texts ReplayWeb.page / wabac.js show instead of an archived page. */
export const REPLAY_FAILURE_PATTERNS: readonly string[] = [
  "Archived Page Not Found",
  "Original Archived Page Missing",
  "Sorry, this page was not found in this archive",
  "This page is marked as a duplicate but the original page is missing",
];

/**
 * Return the ReplayWeb.page failure phrase found in `text` (the replayed
 * page's text), or null when the text shows no such failure.
 */
export function detectReplayFailure(text: string): string | null {
  for (const pattern of REPLAY_FAILURE_PATTERNS) {
    if (text.includes(pattern)) return pattern;
  }
  return null;
}

// ---------------------------------------------------------------------------
// ReplayWeb.page assets

function findRepoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "scripts", "fetch-replay.sh"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("replay harness: cannot find the repository root (scripts/fetch-replay.sh)");
    dir = parent;
  }
}

let assetsPromise: Promise<string> | null = null;

/**
 * Folder holding ReplayWeb.page's ui.js and sw.js: $REPLAYWEB_DIR, else
 * <repo>/.cache/replaywebpage, running scripts/fetch-replay.sh when missing.
 */
export function ensureReplayAssets(): Promise<string> {
  assetsPromise ??= (async () => {
    const fromEnv = process.env.REPLAYWEB_DIR;
    if (fromEnv) {
      if (!existsSync(path.join(fromEnv, "ui.js")) || !existsSync(path.join(fromEnv, "sw.js"))) {
        throw new Error(`REPLAYWEB_DIR=${fromEnv} lacks ui.js/sw.js`);
      }
      return fromEnv;
    }
    const root = findRepoRoot();
    const dir = path.join(root, ".cache", "replaywebpage");
    if (!existsSync(path.join(dir, "ui.js")) || !existsSync(path.join(dir, "sw.js"))) {
      try {
        await execFileAsync("bash", [path.join(root, "scripts", "fetch-replay.sh")], { cwd: root, timeout: 300_000 });
      } catch (err) {
        throw new Error(`replay harness: scripts/fetch-replay.sh failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return dir;
  })();
  assetsPromise.catch(() => {
    assetsPromise = null;
  });
  return assetsPromise;
}

// ---------------------------------------------------------------------------
// HTTP server

function escapeAttr(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function embedHtml(source: string, url: string): string {
  return `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>Replay harness</title>
<link rel="icon" href="data:,">
<style>html, body { margin: 0; height: 100%; } replay-web-page { display: block; width: 100%; height: 100vh; }</style>
<script src="/ui.js"></script>
</head>
<body>
<replay-web-page source="${escapeAttr(source)}" url="${escapeAttr(url)}" replayBase="/replay/" embed="replayonly"></replay-web-page>
</body>
</html>
`;
}

/**
 * ReplayWeb.page's <replay-web-page> registers `<replayBase>sw.js?serveIndex=1`
 * and then immediately points its iframe at `<replayBase>?source=...`. If the
 * service worker is not active yet, that navigation reaches the HTTP server
 * (404) and the embed never recovers. The harness therefore first opens this
 * page (inside the /replay/ scope), which registers the very same worker URL
 * and waits until it is active; the embed's own registration is then a no-op.
 */
const WARMUP_PATH = "/replay/__harness_warmup.html";
const SW_URL = "/replay/sw.js?serveIndex=1";
const WARMUP_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>warming up</title><link rel="icon" href="data:,"></head>
<body><script>
navigator.serviceWorker
  .register(${JSON.stringify(SW_URL)}, { scope: "/replay/" })
  .then(function () { return navigator.serviceWorker.ready; })
  .then(function (reg) {
    var sw = reg.active;
    if (sw && sw.state !== "activated") {
      return new Promise(function (resolve) {
        sw.addEventListener("statechange", function () { if (sw.state === "activated") resolve(); });
      });
    }
  })
  .then(function () { document.title = "sw-ready"; })
  .catch(function (err) { document.title = "sw-error: " + err; });
</script></body></html>
`;

async function serveFile(req: http.IncomingMessage, res: http.ServerResponse, filePath: string, contentType: string): Promise<void> {
  const info = await stat(filePath).catch(() => null);
  if (!info?.isFile()) {
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("Not Found\n");
    return;
  }
  const size = info.size;
  const range = parseRangeHeader(req.headers.range, size);
  const common = { "Content-Type": contentType, "Accept-Ranges": "bytes", "Cache-Control": "no-store" };
  if (range === "unsatisfiable") {
    res.writeHead(416, { ...common, "Content-Range": `bytes */${size}`, "Content-Length": 0 }).end();
    return;
  }
  const start = range ? range.start : 0;
  const end = range ? range.end : size - 1;
  const length = size === 0 ? 0 : end - start + 1;
  const headers: Record<string, string | number> = { ...common, "Content-Length": length };
  if (range) headers["Content-Range"] = `bytes ${start}-${end}/${size}`;
  res.writeHead(range ? 206 : 200, headers);
  if (req.method === "HEAD" || length === 0) {
    res.end();
    return;
  }
  const fh = await open(filePath, "r");
  try {
    const buf = Buffer.alloc(length);
    await fh.read(buf, 0, length, start);
    res.end(buf);
  } finally {
    await fh.close();
  }
}

/**
 * Serve ReplayWeb.page and the archives of `archiveDir` on 127.0.0.1:
 *  - /ui.js (and /replay/ui.js), /replay/sw.js: the ReplayWeb.page build;
 *  - /embed.html?source=...&url=...: a page embedding <replay-web-page>;
 *  - /archives/<path>: files of `archiveDir`, with single-range support.
 */
export async function startReplayServer(archiveDir: string): Promise<ReplayServer> {
  const assets = await ensureReplayAssets();
  const [uiJs, swJs] = await Promise.all([readFile(path.join(assets, "ui.js")), readFile(path.join(assets, "sw.js"))]);
  const archiveRoot = path.resolve(archiveDir);

  const debug = Boolean(process.env.REPLAY_DEBUG);
  const server = http.createServer((req, res) => {
    if (debug) res.on("finish", () => process.stderr.write(`[replay-server] ${req.method ?? ""} ${req.url ?? ""} ${req.headers.range ?? ""} -> ${res.statusCode}\n`));
    const handle = async (): Promise<void> => {
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.writeHead(405, { Allow: "GET, HEAD" }).end();
        return;
      }
      const u = new URL(req.url ?? "/", "http://127.0.0.1");
      const sendBuf = (status: number, type: string, body: Buffer | string): void => {
        const buf = typeof body === "string" ? Buffer.from(body, "utf-8") : body;
        res.writeHead(status, { "Content-Type": type, "Content-Length": buf.length, "Cache-Control": "no-store" });
        res.end(req.method === "HEAD" ? undefined : buf);
      };
      switch (u.pathname) {
        case "/ui.js":
        case "/replay/ui.js":
          sendBuf(200, "text/javascript; charset=utf-8", uiJs);
          return;
        case "/replay/sw.js":
          sendBuf(200, "text/javascript; charset=utf-8", swJs);
          return;
        case "/embed.html":
          sendBuf(200, "text/html; charset=utf-8", embedHtml(u.searchParams.get("source") ?? "", u.searchParams.get("url") ?? ""));
          return;
        case WARMUP_PATH:
          sendBuf(200, "text/html; charset=utf-8", WARMUP_HTML);
          return;
        case "/favicon.ico":
          sendBuf(404, "text/plain; charset=utf-8", "");
          return;
      }
      if (u.pathname.startsWith("/archives/")) {
        let rel: string;
        try {
          rel = decodeURIComponent(u.pathname.slice("/archives/".length));
        } catch {
          sendBuf(400, "text/plain; charset=utf-8", "Bad Request\n");
          return;
        }
        const filePath = path.resolve(archiveRoot, rel);
        if (rel.includes("\0") || (filePath !== archiveRoot && !filePath.startsWith(archiveRoot + path.sep))) {
          sendBuf(404, "text/plain; charset=utf-8", "Not Found\n");
          return;
        }
        await serveFile(req, res, filePath, contentTypeFor(filePath));
        return;
      }
      sendBuf(404, "text/plain; charset=utf-8", "Not Found\n");
    };
    handle().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" }).end(String(err));
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------
// Browser

/** Chromium flags used by the harness (exported for other browser-based tests). */
export const BROWSER_ARGS: readonly string[] = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-gpu",
  // Safety net: resolve no host names except loopback, so nothing leaves this machine.
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
];

/** Parse a replay frame URL: ".../replay/w/<coll>/<ts>mp_/<archived url>". */
export function parseReplayFrameUrl(frameUrl: string): { coll: string; ts: string; archivedUrl: string } | null {
  const m = /\/replay\/w\/(.+?)\/(\d*)mp_\/(.+)$/.exec(frameUrl);
  if (!m) return null;
  const [, coll = "", ts = "", archivedUrl = ""] = m;
  return { coll, ts, archivedUrl };
}

function normalizeUrl(u: string): string {
  try {
    return new URL(u).href;
  } catch {
    return u;
  }
}

function sameArchivedUrl(a: string, b: string): boolean {
  if (normalizeUrl(a) === normalizeUrl(b)) return true;
  try {
    return decodeURI(normalizeUrl(a)) === decodeURI(normalizeUrl(b));
  } catch {
    return false;
  }
}

interface FrameSnapshot {
  readyState: string;
  title: string;
  text: string;
  images: ReplayedImage[];
  stylesheets: ReplayedStylesheet[];
  bodyBackground: string;
}

async function snapshotFrame(frame: Frame): Promise<FrameSnapshot | null> {
  try {
    return await frame.evaluate(() => ({
      readyState: document.readyState,
      title: document.title,
      text: document.body ? document.body.innerText : "",
      images: Array.from(document.images, (img) => ({ src: img.currentSrc || img.src, complete: img.complete, naturalWidth: img.naturalWidth })),
      stylesheets: Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel~="stylesheet"]'), (link) => {
        let rules: number | null = null;
        try {
          rules = link.sheet ? link.sheet.cssRules.length : null;
        } catch {
          rules = null;
        }
        return { href: link.href, rules };
      }),
      bodyBackground: document.body ? getComputedStyle(document.body).backgroundColor : "",
    }));
  } catch {
    // Detached or navigating frame, or no execution context yet.
    return null;
  }
}

/** Text of the top page including open shadow roots and frames, for error messages. */
async function describeState(page: Page): Promise<string> {
  const lines: string[] = [];
  for (const frame of page.frames()) {
    let text = "";
    try {
      text = await frame.evaluate(() => {
        const parts: string[] = [];
        const walk = (root: Document | ShadowRoot | Element): void => {
          for (const el of Array.from(root.querySelectorAll("*"))) {
            if (el.shadowRoot) {
              parts.push(el.shadowRoot.textContent ?? "");
              walk(el.shadowRoot);
            }
          }
        };
        parts.push(document.body ? document.body.innerText : "");
        walk(document);
        return parts
          .join(" ")
          .replace(/\s+/g, " ")
          .trim();
      });
    } catch {
      text = "<unavailable>";
    }
    lines.push(`  frame ${frame.url()}: ${text.slice(0, 400)}`);
  }
  return lines.join("\n");
}

/** Close the browser and make sure its process is gone (so its profile can be deleted). */
export async function closeBrowser(browser: Browser): Promise<void> {
  const proc = browser.process();
  await browser.close().catch(() => undefined);
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill("SIGKILL");
    await Promise.race([exited, sleep(5_000)]);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Replay `opts.url` from `opts.source` in ReplayWeb.page and return the
 * replayed document's title and text. The replayed page lives in an iframe
 * (inside the <replay-web-page> shadow DOM, inside ReplayWeb.page's own
 * iframe); it is found among `page.frames()` by its URL
 * (`/replay/w/<coll>/<ts>mp_/<archived url>`).
 *
 * Resolves once that frame's document is complete and, if `waitForText` is
 * given, its text contains it. Also resolves (without waiting for
 * `waitForText`) when the frame shows a ReplayWeb.page "not found" page: check
 * with detectReplayFailure(result.text). If the archived URL redirected within
 * the archive, the frame ends at the redirect target; that frame is accepted
 * once it has been stable for a moment (see `frameUrl`). Rejects on timeout
 * with a description of what the browser showed.
 */
/** The headless Chromium the replay helpers drive (its own profile, loopback only). */
export function launchReplayBrowser(userDataDir: string, timeoutMs: number): Promise<Browser> {
  return puppeteer.launch({
    executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium",
    headless: true,
    userDataDir,
    args: [...BROWSER_ARGS],
    timeout: Math.max(5_000, timeoutMs),
    protocolTimeout: Math.max(30_000, timeoutMs),
  });
}

export async function replayPage(server: ReplayServer, opts: ReplayPageOptions): Promise<ReplayPageResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const userDataDir = await mkdtemp(path.join(os.tmpdir(), "replay-profile-"));
  let browser: Browser | null = null;
  const consoleLines: string[] = [];
  try {
    browser = await launchReplayBrowser(userDataDir, timeoutMs);
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("console", (msg) => {
      if (consoleLines.length < 50) consoleLines.push(`${msg.type()}: ${msg.text()}`);
    });
    page.on("pageerror", (err) => {
      if (consoleLines.length < 50) consoleLines.push(`pageerror: ${err instanceof Error ? err.message : String(err)}`);
    });

    // Install ReplayWeb.page's service worker before the embed needs it (see WARMUP_PATH).
    await page.goto(server.url + WARMUP_PATH, { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });
    await page.waitForFunction(() => document.title !== "warming up", { timeout: Math.max(1_000, deadline - Date.now()) });
    const warmup = await page.title();
    if (warmup !== "sw-ready") throw new Error(`replayPage: service worker registration failed: ${warmup}`);

    const embedUrl = `${server.url}/embed.html?${new URLSearchParams({ source: opts.source, url: opts.url }).toString()}`;
    await page.goto(embedUrl, { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });

    let otherSince = 0;
    let otherUrl = "";
    let last: FrameSnapshot | null = null;
    while (Date.now() < deadline) {
      const candidates = page.frames().filter((f) => parseReplayFrameUrl(f.url()) !== null);
      const exact = candidates.find((f) => sameArchivedUrl(parseReplayFrameUrl(f.url())?.archivedUrl ?? "", opts.url));
      const frame = exact ?? candidates[0];
      if (frame) {
        if (opts.scroll) await frame.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight)).catch(() => undefined);
        const snap = await snapshotFrame(frame);
        last = snap ?? last;
        if (snap && snap.readyState === "complete") {
          const result: ReplayPageResult = {
            title: snap.title,
            text: snap.text,
            frameUrl: frame.url(),
            images: snap.images,
            stylesheets: snap.stylesheets,
            bodyBackground: snap.bodyBackground,
          };
          if (detectReplayFailure(snap.text)) return result;
          const imagesDone = !opts.waitForImages || snap.images.every((img) => img.complete);
          if (exact) {
            if ((!opts.waitForText || snap.text.includes(opts.waitForText)) && imagesDone) return result;
          } else {
            // Redirected inside the archive: accept once the frame URL is stable.
            if (otherUrl !== frame.url()) {
              otherUrl = frame.url();
              otherSince = Date.now();
            } else if (Date.now() - otherSince >= 1_500 && (!opts.waitForText || snap.text.includes(opts.waitForText)) && imagesDone) {
              return result;
            }
          }
        }
      }
      await sleep(200);
    }
    const state = await describeState(page).catch(() => "  <unavailable>");
    throw new Error(
      `replayPage: timed out after ${timeoutMs} ms replaying ${opts.url} from ${opts.source}` +
        (opts.waitForText ? ` (waiting for text ${JSON.stringify(opts.waitForText)})` : "") +
        `\nlast replay frame text: ${last ? JSON.stringify(last.text.slice(0, 300)) : "<no replay frame>"}` +
        `\nframes:\n${state}` +
        (consoleLines.length ? `\nconsole:\n  ${consoleLines.slice(-20).join("\n  ")}` : ""),
    );
  } finally {
    if (browser) await closeBrowser(browser);
    await rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch(() => undefined);
  }
}
