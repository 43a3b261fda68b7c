/**
 * Several pages of one archive replayed in ReplayWeb.page in one browser: each page is embedded in turn in
 * the same tab, where replayPage() (./replay.ts) launches a browser for every page. For a test that replays
 * every page of one WACZ: one browser launch and one archive load (ReplayWeb.page keeps the loaded archive
 * in the browser's storage) instead of one of each per page. The browser's user-data folder is its own and
 * deleted afterwards, so nothing leaks into another test's replay.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Browser, Frame, Page } from "puppeteer-core";
import { closeBrowser, detectReplayFailure, launchReplayBrowser, parseReplayFrameUrl, SW_READY_PATH, type ReplayedImage, type ReplayServer } from "./replay.js";

export interface ReplayedPage {
  url: string;
  title: string;
  text: string;
  images: ReplayedImage[];
}

/**
 * Replay each of `urls` from `source` ("/archives/<file>.wacz"), one after the other in one tab. A page is
 * taken once its replay frame (the frame whose archived URL is that page's) is complete, its text holds
 * `waitForText` and every <img> finished loading (or failed), or once ReplayWeb.page shows its "not found"
 * page (check with detectReplayFailure). Rejects when `timeoutMs` runs out, saying which page and what the
 * frame showed.
 */
export async function replayPages(server: ReplayServer, opts: { source: string; urls: string[]; waitForText?: string; timeoutMs?: number }): Promise<ReplayedPage[]> {
  const timeoutMs = opts.timeoutMs ?? 90_000;
  const deadline = Date.now() + timeoutMs;
  const userDataDir = await mkdtemp(path.join(os.tmpdir(), "replay-pages-"));
  let browser: Browser | null = null;
  try {
    browser = await launchReplayBrowser(userDataDir, timeoutMs);
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(server.url + SW_READY_PATH, { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });
    await page.waitForFunction(() => document.title !== "installing", { timeout: Math.max(1_000, deadline - Date.now()) });
    const warmup = await page.title();
    if (warmup !== "sw-ready") throw new Error(`replayPages: service worker registration failed: ${warmup}`);
    const results: ReplayedPage[] = [];
    for (const url of opts.urls) results.push(await replayOne(page, server, opts.source, url, opts.waitForText, deadline));
    return results;
  } finally {
    if (browser) await closeBrowser(browser);
    await rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch(() => undefined);
  }
}

async function replayOne(page: Page, server: ReplayServer, source: string, url: string, waitForText: string | undefined, deadline: number): Promise<ReplayedPage> {
  const embedUrl = `${server.url}/embed.html?${new URLSearchParams({ source, url }).toString()}`;
  await page.goto(embedUrl, { waitUntil: "load", timeout: Math.max(1_000, deadline - Date.now()) });
  let last = "<no replay frame>";
  while (Date.now() < deadline) {
    const frame = page.frames().find((f) => sameUrl(parseReplayFrameUrl(f.url())?.archivedUrl, url));
    const snap = frame ? await snapshot(frame) : null;
    if (snap) last = JSON.stringify(snap.text.slice(0, 300));
    if (snap && snap.readyState === "complete") {
      const result = { url, title: snap.title, text: snap.text, images: snap.images };
      if (detectReplayFailure(snap.text)) return result;
      if ((!waitForText || snap.text.includes(waitForText)) && snap.images.every((img) => img.complete)) return result;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`replayPages: timed out replaying ${url} from ${source}; last replay frame text: ${last}`);
}

function sameUrl(archived: string | undefined, url: string): boolean {
  if (archived === undefined) return false;
  try {
    return decodeURI(new URL(archived).href) === decodeURI(new URL(url).href);
  } catch {
    return archived === url;
  }
}

async function snapshot(frame: Frame): Promise<{ readyState: string; title: string; text: string; images: ReplayedImage[] } | null> {
  try {
    return await frame.evaluate(() => ({
      readyState: document.readyState,
      title: document.title,
      text: document.body ? document.body.innerText : "",
      images: Array.from(document.images, (img) => ({ src: img.currentSrc || img.src, complete: img.complete, naturalWidth: img.naturalWidth })),
    }));
  } catch {
    // Detached or navigating frame, or no execution context yet.
    return null;
  }
}
