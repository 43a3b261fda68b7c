import type { Page } from "puppeteer-core";
import { devToolsTargets } from "../fetch/devToolsTargets.js";
import { errorMessage, logger } from "../log/logger.js";

/** Each tab's DevTools target id (it stays the tab's for its life). */
const targetIds = new WeakMap<Page, string>();

/**
 * The tab's favicon as the browser shows it, as browsertrix-crawler reads it for pages.jsonl's favIconUrl:
 * the DevTools endpoint's target list names it once the browser has fetched and decoded it (the page's
 * <link rel=icon>, or /favicon.ico without one); no DevTools command does. The browser fetches it through
 * the page's network, so the tab's capture archives it. Null when the browser has none.
 */
export async function pageFavicon(tab: Page): Promise<string | null> {
  try {
    const targetId = await targetIdOf(tab);
    const targets = await devToolsTargets(tab.browser().wsEndpoint());
    return targets.find((target) => target.id === targetId)?.faviconUrl ?? null;
  } catch (err) {
    logger.debug("page", "cannot read the page's favicon from the browser", { url: tab.url(), error: errorMessage(err) });
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
