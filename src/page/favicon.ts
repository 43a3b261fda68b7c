import type { Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";

const FAVICON_DEADLINE_MS = 5000;

/** Each tab's DevTools target id (it stays the tab's for its life). */
const targetIds = new WeakMap<Page, string>();

interface DevToolsTarget {
  id?: unknown;
  faviconUrl?: unknown;
}

/**
 * The tab's favicon as the browser shows it, as browsertrix-crawler reads it for pages.jsonl's favIconUrl:
 * the DevTools HTTP endpoint's target list names it (`faviconUrl`) once the browser has fetched and decoded
 * it (the page's <link rel=icon>, or /favicon.ico without one); no DevTools command does. The browser fetches
 * it through the page's network, so the tab's capture archives it. Null when the browser has none.
 */
export async function pageFavicon(tab: Page): Promise<string | null> {
  const url = tab.url();
  try {
    const endpoint = new URL(tab.browser().wsEndpoint());
    const targetId = await targetIdOf(tab);
    const answer = await fetch(`http://${endpoint.host}/json/list`, { signal: AbortSignal.timeout(FAVICON_DEADLINE_MS) });
    if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
    const targets = (await answer.json()) as DevToolsTarget[];
    const favicon = targets.find((target) => target.id === targetId)?.faviconUrl;
    return typeof favicon === "string" && favicon ? favicon : null;
  } catch (err) {
    logger.debug("page", "cannot read the page's favicon from the browser", { url, error: errorMessage(err) });
    return null;
  }
}

async function targetIdOf(tab: Page): Promise<string> {
  const known = targetIds.get(tab);
  if (known) return known;
  const cdp = await tab.createCDPSession();
  try {
    const { targetInfo } = await cdp.send("Target.getTargetInfo");
    targetIds.set(tab, targetInfo.targetId);
    return targetInfo.targetId;
  } finally {
    await cdp.detach().catch(() => undefined);
  }
}
