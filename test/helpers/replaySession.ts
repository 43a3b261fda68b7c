/**
 * Several pages of the same archive(s) replayed in ReplayWeb.page in one browser context (of replay.ts's
 * replay browser): ReplayWeb.page's service worker installs once, then each page is replayed in a tab of its
 * own (what replay.ts's replayPage does once per call, in a fresh context each time). For suites that replay
 * many pages of one crawl; what a page shows is read exactly as replayPage reads it.
 *
 *   const session = await openReplaySession(server);
 *   const result = await session.replay({ source: "/archives/x.wacz", url: "http://127.0.0.1:1234/site/index.html" });
 *   await session.close();
 *
 * The tabs share the context's storage: the service worker and the archives it loaded (IndexedDB) serve
 * every later replay, as they do a visitor who opens several pages of an archive.
 */
import {
  detectReplayFailure,
  embedUrlOf,
  openReplayContext,
  recordServiceWorkerConsole,
  parseReplayFrameUrl,
  sameArchivedUrl,
  snapshotFrame,
  type FrameSnapshot,
  SW_READY_PATH,
  type ReplayPageOptions,
  type ReplayPageResult,
  type ReplayServer,
} from "./replay.js";

export interface ReplaySession {
  /** Replay one page in a new tab, resolving as replay.ts's replayPage does (`timeoutMs` counts from this call). */
  replay(opts: ReplayPageOptions): Promise<ReplayPageResult>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Start one browser for `server`'s archives and install ReplayWeb.page's service worker in it. */
export async function openReplaySession(server: ReplayServer, opts: { timeoutMs?: number } = {}): Promise<ReplaySession> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const { context, close } = await openReplayContext();
  const serviceWorkerConsole: string[] = [];
  recordServiceWorkerConsole(context, serviceWorkerConsole);
  try {
    const page = await context.newPage();
    // Install ReplayWeb.page's service worker before an embed needs it (see src/qa/replayServer.ts).
    await page.goto(server.url + SW_READY_PATH, { waitUntil: "load", timeout: timeoutMs });
    await page.waitForFunction(() => document.title !== "installing", { timeout: timeoutMs });
    const warmup = await page.title();
    if (warmup !== "sw-ready") throw new Error(`openReplaySession: service worker registration failed: ${warmup}`);
    await page.close();
  } catch (err) {
    await close();
    throw err;
  }
  const shared = context;

  const replay = async (opts: ReplayPageOptions): Promise<ReplayPageResult> => {
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const deadline = Date.now() + timeoutMs;
    const consoleLines: string[] = [];
    const page = await shared.newPage();
    try {
      await page.setViewport({ width: 1280, height: 900 });
      page.on("console", (msg) => {
        if (consoleLines.length < 50) consoleLines.push(`${msg.type()}: ${msg.text()}`);
      });
      page.on("pageerror", (err) => {
        if (consoleLines.length < 50) consoleLines.push(`pageerror: ${err instanceof Error ? err.message : String(err)}`);
      });
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
            const textDone = !opts.waitForText || snap.text.includes(opts.waitForText);
            if (exact) {
              if (textDone && imagesDone) return result;
            } else if (otherUrl !== frame.url()) {
              // Redirected inside the archive: accept once the frame URL is stable.
              otherUrl = frame.url();
              otherSince = Date.now();
            } else if (Date.now() - otherSince >= 1_500 && textDone && imagesDone) {
              return result;
            }
          }
        }
        await sleep(200);
      }
      const frames = page.frames().map((f) => `  frame ${f.url()}`).join("\n");
      throw new Error(
        `replaySession: timed out after ${timeoutMs} ms replaying ${opts.url} from ${opts.source}` +
          (opts.waitForText ? ` (waiting for text ${JSON.stringify(opts.waitForText)})` : "") +
          `\nlast replay frame text: ${last ? JSON.stringify(last.text.slice(0, 300)) : "<no replay frame>"}` +
          `\nframes:\n${frames}` +
          (consoleLines.length ? `\nconsole:\n  ${consoleLines.slice(-20).join("\n  ")}` : ""),
      );
    } finally {
      await page.close().catch(() => undefined);
    }
  };

  return { replay, close };
}
