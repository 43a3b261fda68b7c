import type { Browser } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { BrowserRecords } from "./runningBrowsers.js";
import { launchBrowser, type LaunchedBrowser, type LaunchOptions } from "./launch.js";

export interface BrowserHostOptions extends LaunchOptions {
  /**
   * Folder (in the collection) where each running browser is recorded. Before its first launch the host
   * kills the browsers recorded there by crawlers that died, and removes their profiles.
   */
  recordsDir?: string;
  /** Called when a new Chromium replaces one that is gone (for the metrics). */
  onRestart?: () => void;
}

/**
 * The one Chromium of a crawler process. If it crashes (disconnects), the next page asks for a new one
 * and gets it: the crawl goes on, and the pages that were loading are retried.
 */
export class BrowserHost {
  private current: LaunchedBrowser | null = null;
  private launching: Promise<LaunchedBrowser> | null = null;
  private closed = false;
  launches = 0;
  private readonly records: BrowserRecords | null;

  constructor(private readonly options: BrowserHostOptions) {
    this.records = options.recordsDir ? new BrowserRecords(options.recordsDir) : null;
  }

  async browser(): Promise<Browser> {
    if (this.closed) throw new Error("browser closed: the crawl is stopping");
    if (this.current?.browser.connected) return this.current.browser;
    if (!this.launching) {
      const previous = this.current;
      this.current = null;
      this.launching = (async () => {
        if (previous) {
          logger.warn("browser", "Chromium is gone (crashed or killed): starting a new one");
          await previous.close().catch(() => undefined);
        }
        if (this.launches === 0) await this.records?.cleanLeftovers();
        // The crawl's browser: every connection checked by the address policy when it is opened.
        const launched = await launchBrowser({ ...this.options, gateEveryConnection: true }, this.records);
        this.launches += 1;
        if (previous) this.options.onRestart?.();
        return launched;
      })();
      try {
        this.current = await this.launching;
      } finally {
        this.launching = null;
      }
    } else {
      await this.launching;
    }
    return this.current!.browser;
  }

  /** Close every tab at once: loads in progress fail and their pages are handed back. */
  async closeAllPages(): Promise<void> {
    const browser = this.current?.browser;
    if (!browser?.connected) return;
    for (const page of await browser.pages().catch(() => [])) await page.close().catch((err: unknown) => logger.debug("browser", errorMessage(err)));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.launching?.catch(() => undefined);
    await this.current?.close();
    this.current = null;
  }
}
