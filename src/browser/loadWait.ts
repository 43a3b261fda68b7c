import type { Page } from "puppeteer-core";

/**
 * Wait until the page's network has been idle for a moment, up to a cap: script-loaded content is
 * captured without a fixed sleep on every page.
 */
export async function waitForQuietNetwork(tab: Page, capMs: number, idleMs = 500): Promise<void> {
  if (capMs <= 0) return;
  await tab.waitForNetworkIdle({ idleTime: idleMs, timeout: capMs, concurrency: 0 }).catch(() => undefined);
}
