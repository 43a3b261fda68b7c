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
 * Every replay runs in a browser context of its own (service-worker
 * registrations, caches and IndexedDB do not leak between replays) of one
 * headless Chromium per test process, started at the first replay and ended
 * with the process: a browser start costs more CPU than most replays.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import puppeteer, { type Browser, type BrowserContext, type Frame, type Page } from "puppeteer-core";
import { loadReplayAssets } from "../../src/replay/replayAssets.js";
import { folderResolver, startReplayServer as startQaReplayServer, SW_READY_PATH, type ReplayServer } from "../../src/replay/replayServer.js";

export type { ReplayServer };
export { SW_READY_PATH };

export interface ReplayPageOptions {
  /** Archive to load, as served by the replay server: "/archives/<file>.wacz" or "/archives/<file>.json" (multi-WACZ). */
  source: string;
  /** The archived (original) URL to replay. */
  url: string;
  /** The capture to replay, as a 14-digit timestamp (YYYYMMDDhhmmss): the one nearest it. Default: the latest. */
  ts?: string;
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
  /** What ReplayWeb.page's service worker logged since this replay's browser context opened (a session's: since the session opened; the first 200 lines): why a resource failed. */
  serviceWorkerConsole: string[];
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
// ReplayWeb.page and its HTTP server: the product's (src/qa/), which `qa` and `crawl --qa` serve replay with

/** Folder holding ReplayWeb.page's ui.js and sw.js ($REPLAYWEB_DIR, else .cache/replaywebpage, fetched when missing). */
export async function ensureReplayAssets(): Promise<string> {
  return (await loadReplayAssets()).dir;
}

/**
 * Serve ReplayWeb.page and the archives of `archiveDir` on 127.0.0.1:
 *  - /ui.js (and /replay/ui.js), /replay/sw.js: the ReplayWeb.page build;
 *  - /embed.html?source=...&url=...: a page embedding <replay-web-page>;
 *  - /archives/<path>: files of `archiveDir`, with single-range support.
 */
export async function startReplayServer(archiveDir: string): Promise<ReplayServer> {
  return startQaReplayServer(await loadReplayAssets(), folderResolver(archiveDir));
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

/** The page embedding one archived page (of `opts.source`, at `opts.ts` if given). */
export function embedUrlOf(server: ReplayServer, opts: Pick<ReplayPageOptions, "source" | "url" | "ts">): string {
  return `${server.url}/embed.html?${new URLSearchParams({ source: opts.source, url: opts.url, ...(opts.ts ? { ts: opts.ts } : {}) }).toString()}`;
}

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

export function sameArchivedUrl(a: string, b: string): boolean {
  if (normalizeUrl(a) === normalizeUrl(b)) return true;
  try {
    return decodeURI(normalizeUrl(a)) === decodeURI(normalizeUrl(b));
  } catch {
    return false;
  }
}

export interface FrameSnapshot {
  readyState: string;
  title: string;
  text: string;
  images: ReplayedImage[];
  stylesheets: ReplayedStylesheet[];
  bodyBackground: string;
}

/** What a replay frame shows now (null while it is detached, navigating or has no context yet). */
export async function snapshotFrame(frame: Frame): Promise<FrameSnapshot | null> {
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

let sharedBrowser: Promise<Browser> | undefined;

/** The test process's replay browser, started again if it died (its profile is removed when the process ends). */
async function replayBrowser(): Promise<Browser> {
  const current = await sharedBrowser?.catch(() => undefined);
  if (current?.connected) return current;
  sharedBrowser = (async () => {
    const userDataDir = mkdtempSync(path.join(os.tmpdir(), "replay-profile-"));
    process.once("exit", () => rmSync(userDataDir, { recursive: true, force: true }));
    return launchReplayBrowser(userDataDir, 120_000);
  })();
  return sharedBrowser;
}

/** A fresh browser context of the replay browser, for one replay; `close` ends it and everything it stored. */
export async function openReplayContext(): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const context = await (await replayBrowser()).createBrowserContext();
  return { context, close: () => context.close().catch(() => undefined) };
}

/** Collect what the service workers of `context` log, into `lines` (at most 200), from now on. */
export function recordServiceWorkerConsole(context: BrowserContext, lines: string[]): void {
  context.on("targetcreated", (target) => {
    if (target.type() !== "service_worker") return;
    void target
      .worker()
      .then((worker) =>
        worker?.on("console", (msg) => {
          if (lines.length < 200) lines.push(`${msg.type()}: ${msg.text()}`);
        }),
      )
      .catch(() => undefined);
  });
}

export async function replayPage(server: ReplayServer, opts: ReplayPageOptions): Promise<ReplayPageResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const { context, close } = await openReplayContext();
  const consoleLines: string[] = [];
  const serviceWorkerConsole: string[] = [];
  recordServiceWorkerConsole(context, serviceWorkerConsole);
  try {
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("console", (msg) => {
      if (consoleLines.length < 50) consoleLines.push(`${msg.type()}: ${msg.text()}`);
    });
    page.on("pageerror", (err) => {
      if (consoleLines.length < 50) consoleLines.push(`pageerror: ${err instanceof Error ? err.message : String(err)}`);
    });

    // Install ReplayWeb.page's service worker before the embed needs it (see src/qa/replayServer.ts).
    await page.goto(server.url + SW_READY_PATH, { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });
    await page.waitForFunction(() => document.title !== "installing", { timeout: Math.max(1_000, deadline - Date.now()) });
    const warmup = await page.title();
    if (warmup !== "sw-ready") throw new Error(`replayPage: service worker registration failed: ${warmup}`);

    await page.goto(embedUrlOf(server, opts), { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });

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
            serviceWorkerConsole,
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
        (consoleLines.length ? `\nconsole:\n  ${consoleLines.slice(-20).join("\n  ")}` : "") +
        (serviceWorkerConsole.length ? `\nservice worker console:\n  ${serviceWorkerConsole.slice(-20).join("\n  ")}` : ""),
    );
  } finally {
    await close();
  }
}
