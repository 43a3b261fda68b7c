import type { CDPSession, Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";
import { extractPageText } from "./pageText.js";
import { takeScreenshot, type Screenshot, type ScreenshotKind } from "./screenshots.js";

/** What to take from a loaded page besides its network traffic (--text, --screenshot). */
export interface ExtractOptions {
  text: boolean;
  screenshots: readonly ScreenshotKind[];
}

/** A loaded page's text (null: not asked for, or extraction failed) and screenshots (those that worked). */
export interface PageExtracts {
  text: string | null;
  screenshots: Screenshot[];
}

export const TEXT_DEADLINE_MS = 20_000;
export const SCREENSHOT_DEADLINE_MS = 30_000;
const DETACH_DEADLINE_MS = 5_000;

/** The longest extraction may take, for the page's overall deadline. */
export function extractBudgetMs(options: ExtractOptions): number {
  return (options.text ? TEXT_DEADLINE_MS : 0) + options.screenshots.length * SCREENSHOT_DEADLINE_MS + (wantsAny(options) ? DETACH_DEADLINE_MS : 0);
}

function wantsAny(options: ExtractOptions): boolean {
  return options.text || options.screenshots.length > 0;
}

/**
 * Take the page's text and screenshots, each within its deadline. Never throws: a part that fails or
 * times out is a warning and is left out, the page itself still counts as crawled. The text comes first,
 * the full-page screenshot last (it lays the page out at full height, which may load more).
 */
export async function takePageExtracts(
  tab: Pick<Page, "createCDPSession">,
  options: ExtractOptions,
  url: string,
  deadlines = { textMs: TEXT_DEADLINE_MS, screenshotMs: SCREENSHOT_DEADLINE_MS },
): Promise<PageExtracts> {
  const extracts: PageExtracts = { text: null, screenshots: [] };
  if (!wantsAny(options)) return extracts;
  let cdp: CDPSession;
  try {
    // A session of its own: a call still hanging after its deadline is dropped with it.
    cdp = await withTimeout(tab.createCDPSession(), DETACH_DEADLINE_MS, "no DevTools session for the page");
  } catch (err) {
    logger.warn("page", "page text and screenshots not taken", { url, error: errorMessage(err) });
    return extracts;
  }
  try {
    if (options.text) {
      try {
        extracts.text = await withTimeout(extractPageText(cdp), deadlines.textMs, `text not extracted within ${deadlines.textMs / 1000}s`);
      } catch (err) {
        logger.warn("page", "page text not extracted", { url, error: errorMessage(err) });
      }
    }
    const order: ScreenshotKind[] = ["view", "thumbnail", "fullPage"];
    for (const kind of order.filter((k) => options.screenshots.includes(k))) {
      try {
        extracts.screenshots.push(await withTimeout(takeScreenshot(cdp, kind), deadlines.screenshotMs, `not taken within ${deadlines.screenshotMs / 1000}s`));
      } catch (err) {
        logger.warn("page", "screenshot not taken", { url, screenshot: kind, error: errorMessage(err) });
      }
    }
  } finally {
    await withTimeout(cdp.detach(), DETACH_DEADLINE_MS, "session not detached").catch(() => undefined);
  }
  return extracts;
}
