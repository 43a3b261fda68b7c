/**
 * Plays the media of a replayed page in the real ReplayWeb.page (the harness of replay.ts), as a visitor would:
 * load the archived page, optionally click something (a poster), then play every <video> and <audio> of the
 * replayed frame, muted and faster than real time, until each ends.
 *
 *   const { media, notFound } = await replayMedia(server, { source: "/archives/c.wacz", url: site.url + "/hls.html" });
 *
 * `notFound` lists the archived URLs the replay answered 404 (ReplayWeb.page's "not in archive", sent by its
 * service worker), seen in the responses of every frame of the page.
 */
import type { Frame, Page } from "puppeteer-core";
import { openReplayContext, SW_READY_PATH, type ReplayServer } from "./replay.js";

export interface ReplayMediaOptions {
  /** Archive as the replay server serves it: "/archives/<file>.wacz". */
  source: string;
  /** The archived URL of the page. */
  url: string;
  /** A selector clicked in the replayed frame once it has loaded (a poster that creates the player). */
  click?: string;
  /** Default 4: a 12 s clip plays in 3 s. */
  playbackRate?: number;
  /** Whole budget, browser start included. Default 90 s. */
  timeoutMs?: number;
  /** Stop waiting once no element's currentTime has moved for this long (a player stuck on a missing segment). Default 15 s. */
  stallMs?: number;
}

export interface ReplayedMedia {
  tag: "video" | "audio";
  currentSrc: string;
  duration: number;
  currentTime: number;
  ended: boolean;
  /** MediaError.code (1 aborted, 2 network, 3 decode, 4 source not supported), null without error. */
  errorCode: number | null;
}

export interface MediaReplayResult {
  /** Every media element of the replayed frame, in document order, as it was when all had ended or the time ran out. */
  media: ReplayedMedia[];
  /** Archived URLs the replay answered 404 ("not in archive"), in order. */
  notFound: string[];
  /** True when some element had neither played through nor failed when the time ran out or playback stalled. */
  timedOut: boolean;
  /** Console lines of the page's frames (players log their errors there), for failure messages. */
  console: string[];
}

/** The archived URL of a replay URL: ".../replay/w/<collection>/<timestamp><modifier>/<archived URL>" (the collection may hold a slash). */
export function archivedUrlOf(replayUrl: string): string | null {
  return /\/replay\/w\/.+?\/\d*(?:[a-z]{2}_)?\/(https?:\/\/.+)$/.exec(replayUrl)?.[1] ?? null;
}

/** A media element counts as played through when it ended or stands within 0.3 s of its end. */
export function playedThrough(media: ReplayedMedia): boolean {
  return media.errorCode === null && Number.isFinite(media.duration) && media.duration > 0 && (media.ended || media.currentTime >= media.duration - 0.3);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The replay frame of `url`, once its document has loaded. */
async function replayFrame(page: Page, url: string, deadline: number): Promise<Frame> {
  const wanted = new URL(url).href;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      const archived = archivedUrlOf(frame.url());
      if (archived === null || new URL(archived).href !== wanted) continue;
      const ready = await frame.evaluate(() => document.readyState).catch(() => "");
      if (ready === "complete") return frame;
    }
    await sleep(200);
  }
  throw new Error(`replayMedia: no replay frame of ${url} loaded; frames: ${page.frames().map((f) => f.url()).join(", ")}`);
}

/** Mute and play every media element not yet playing, then read each one's state. */
function playAndRead(frame: Frame, playbackRate: number): Promise<ReplayedMedia[]> {
  return frame.evaluate((rate) => {
    return Array.from(document.querySelectorAll<HTMLMediaElement>("video, audio"), (element) => {
      element.muted = true;
      if (element.playbackRate !== rate) element.playbackRate = rate;
      if (element.paused && !element.ended && element.error === null) element.play().catch(() => undefined);
      return {
        tag: element.tagName.toLowerCase() === "audio" ? ("audio" as const) : ("video" as const),
        currentSrc: element.currentSrc,
        duration: element.duration,
        currentTime: element.currentTime,
        ended: element.ended,
        errorCode: element.error ? element.error.code : null,
      };
    });
  }, playbackRate);
}

export async function replayMedia(server: ReplayServer, opts: ReplayMediaOptions): Promise<MediaReplayResult> {
  const timeoutMs = opts.timeoutMs ?? 90_000;
  const deadline = Date.now() + timeoutMs;
  const playbackRate = opts.playbackRate ?? 4;
  const notFound: string[] = [];
  const consoleLines: string[] = [];
  const { context, close } = await openReplayContext();
  try {
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    // Page-level events cover the replayed frames too: they share the replay server's origin, so its process.
    page.on("response", (response) => {
      const archived = archivedUrlOf(response.url());
      // ReplayWeb.page's own frame asks for the archived site's /favicon.ico: only the replayed pages' requests count.
      const fromReplayedPage = archivedUrlOf(response.frame()?.url() ?? "") !== null;
      if (archived !== null && fromReplayedPage && response.status() === 404) notFound.push(archived);
    });
    page.on("console", (message) => {
      if (consoleLines.length < 100) consoleLines.push(`${message.type()}: ${message.text()}`);
    });

    await page.goto(server.url + SW_READY_PATH, { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });
    await page.waitForFunction(() => document.title !== "installing", { timeout: Math.max(1_000, deadline - Date.now()) });
    if ((await page.title()) !== "sw-ready") throw new Error(`replayMedia: service worker registration failed: ${await page.title()}`);
    await page.goto(`${server.url}/embed.html?${new URLSearchParams({ source: opts.source, url: opts.url }).toString()}`, { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });

    const frame = await replayFrame(page, opts.url, deadline);
    if (opts.click) {
      await frame.waitForSelector(opts.click, { timeout: Math.max(1_000, deadline - Date.now()) });
      await frame.click(opts.click);
    }
    let media: ReplayedMedia[] = [];
    let position = "";
    let movedAt = Date.now();
    while (Date.now() < deadline && Date.now() - movedAt < (opts.stallMs ?? 15_000)) {
      media = await playAndRead(frame, playbackRate).catch(() => media);
      if (media.length > 0 && media.every((m) => playedThrough(m) || m.errorCode !== null)) break;
      const now = JSON.stringify(media.map((m) => [m.currentTime, m.duration]));
      if (now !== position) [position, movedAt] = [now, Date.now()];
      await sleep(250);
    }
    const timedOut = media.length === 0 || !media.every((m) => playedThrough(m) || m.errorCode !== null);
    // Give requests still in flight (a last segment) a moment to be answered, so notFound is complete.
    await sleep(500);
    return { media, notFound: [...notFound], timedOut, console: consoleLines };
  } finally {
    await close();
  }
}
