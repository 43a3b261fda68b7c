/**
 * Full-text search in the real ReplayWeb.page: opens an archive's page list with a search query (the
 * `view="pages"` and `query` attributes of <replay-web-page>) and reads back the pages it lists. The
 * search runs over the text index ReplayWeb.page builds from the WACZ's pages files (their `text`).
 */
import type { Frame } from "puppeteer-core";
import { openReplayContext, SW_READY_PATH, type ReplayServer } from "./replay.js";

export interface SearchOptions {
  /** Archive as served by the replay server: "/archives/<file>.wacz". */
  source: string;
  query: string;
  timeoutMs?: number;
}

export interface FoundPage {
  url: string;
  title: string;
  /** The page list's thumbnail (ReplayWeb.page replays `urn:thumbnail:<url>`): null when it shows none. */
  thumbnail: { src: string; width: number; height: number } | null;
}

/** Results must stay the same this long before they count (the list fills in as the index loads). */
const STABLE_MS = 2_000;

/** The pages ReplayWeb.page lists for `query` in the archive's page search. */
export async function searchReplayPages(server: ReplayServer, opts: SearchOptions): Promise<FoundPage[]> {
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000);
  const { context, close } = await openReplayContext();
  try {
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    // The page the replay server serves inside the service worker's scope, to install it first.
    await page.goto(server.url + SW_READY_PATH, { waitUntil: "load" });
    await page.waitForFunction(() => document.title !== "installing", { timeout: 30_000 });
    if ((await page.title()) !== "sw-ready") throw new Error(`searchReplayPages: service worker not ready: ${await page.title()}`);

    // The harness's embed page loads ui.js; swap its player for one showing the page search.
    await page.goto(`${server.url}/embed.html?${new URLSearchParams({ source: opts.source, url: "" }).toString()}`, { waitUntil: "load" });
    await page.evaluate((source: string, query: string) => {
      const player = document.createElement("replay-web-page");
      for (const [name, value] of Object.entries({ source, view: "pages", query, replayBase: "/replay/", embed: "default" })) player.setAttribute(name, value);
      document.querySelector("replay-web-page")!.replaceWith(player);
    }, opts.source, opts.query);

    let last = "";
    let since = Date.now();
    while (Date.now() < deadline) {
      const state = await listedPages(page.frames());
      const key = JSON.stringify(state);
      if (key !== last) {
        last = key;
        since = Date.now();
      } else if (state.ready && Date.now() - since >= STABLE_MS) {
        return state.pages;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`searchReplayPages: no stable result for ${JSON.stringify(opts.query)}; last: ${last}`);
  } finally {
    await close();
  }
}

/** Pages listed by the page view's entries (in shadow roots), and whether the page view is there yet. */
async function listedPages(frames: Frame[]): Promise<{ ready: boolean; pages: FoundPage[] }> {
  for (const frame of frames) {
    try {
      const found = await frame.evaluate(() => {
        const views: Element[] = [];
        const entries: Element[] = [];
        const walk = (root: Document | ShadowRoot): void => {
          for (const el of Array.from(root.querySelectorAll("*"))) {
            if (el.localName === "wr-page-view") views.push(el);
            if (el.localName === "wr-page-entry") entries.push(el);
            if (el.shadowRoot) walk(el.shadowRoot);
          }
        };
        walk(document);
        if (!views.length) return null;
        const pages = entries.map((entry) => {
          const page = (entry as unknown as { page?: { url?: string; title?: string; page?: { url?: string; title?: string } } }).page;
          const data = page?.page ?? page;
          const img = entry.shadowRoot?.querySelector("img.thumbnail") as HTMLImageElement | null | undefined;
          const thumbnail = img && img.complete && img.naturalWidth > 0 ? { src: img.currentSrc || img.src, width: img.naturalWidth, height: img.naturalHeight } : null;
          return { url: data?.url ?? "", title: data?.title ?? "", thumbnail, loadingImage: Boolean(img && !img.complete) };
        });
        const loading = views.some((v) => (v as unknown as { updatingSearch?: boolean }).updatingSearch === true) || pages.some((p) => p.loadingImage);
        return { ready: !loading, pages: pages.map(({ loadingImage: _, ...page }) => page) };
      });
      if (found) return found;
    } catch {
      // Frame navigating or detached: look again.
    }
  }
  return { ready: false, pages: [] };
}
