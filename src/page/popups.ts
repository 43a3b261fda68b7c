import type { Browser, CDPSession, Page, Protocol, Target } from "puppeteer-core";
import { logger } from "../log/logger.js";

/** Most popup URLs kept per page (a page opening windows in a loop must not fill memory). */
const MAX_URLS_PER_PAGE = 1000;
/** The page-side hook window.open reports to (a CDP binding: a native function in every frame). */
const BINDING = "__crawlerWindowOpen";

// In every frame, before the page's own scripts: window.open opens nothing and returns null (as when a
// popup blocker stops it), and hands its URL to the crawler.
const NO_WINDOW_OPEN = `(() => {
  const name = ${JSON.stringify(BINDING)};
  const open = function (url) {
    let href;
    try { href = String(new URL(String(url ?? ""), document.baseURI)); } catch (e) { return null; }
    // The binding may not be in a frame made by script yet: its (same-origin) parent's will do.
    for (const w of [window, window.parent, window.top]) {
      try { if (typeof w[name] === "function") { w[name](href); break; } } catch (e) {}
    }
    return null;
  };
  // Configurable: a page script declaring its own top-level \`const open\` (legal beside a configurable global
  // property, a SyntaxError beside a non-configurable one) still runs; assigning window.open still fails.
  try { Object.defineProperty(window, "open", { value: open, writable: false, configurable: true }); } catch (e) {}
})();`;

/**
 * Windows a tab's page opens would keep running outside the capture and outside --minHostInterval,
 * polling the site and holding memory for the rest of the crawl. So `window.open` (in every frame)
 * opens nothing and reports its URL; a window opened another way (a link or form with a target, or a
 * frame the override missed) is closed as soon as puppeteer has attached to it and let it run (closing
 * it any earlier, at Target.targetCreated, can leave the opener's renderer paused for good). The URLs are followed as the page's links (if in scope).
 */
export class PopupCloser {
  private readonly urls = new Set<string>();
  private closedCount = 0;

  private constructor(
    private readonly cdp: CDPSession,
    private readonly browser: Browser,
    private readonly onTarget: (target: Target) => void,
  ) {}

  static async attach(tab: Page): Promise<PopupCloser> {
    const cdp = await tab.createCDPSession();
    const own = tab.target();
    // Puppeteer reports a target once it has attached to it and let it run: closing it then is safe.
    const onTarget = (target: Target) => {
      if (target.type() === "page" && target.opener() === own) void closer.close(target);
    };
    const closer = new PopupCloser(cdp, tab.browser(), onTarget);
    tab.browser().on("targetcreated", onTarget);
    cdp.on("Runtime.bindingCalled", (event: Protocol.Runtime.BindingCalledEvent) => {
      if (event.name === BINDING) closer.note(event.payload);
    });
    cdp.on("Page.windowOpen", (event: Protocol.Page.WindowOpenEvent) => closer.note(event.url));
    await cdp.send("Runtime.enable");
    await cdp.send("Runtime.addBinding", { name: BINDING });
    await cdp.send("Page.enable");
    await cdp.send("Page.addScriptToEvaluateOnNewDocument", { source: NO_WINDOW_OPEN });
    return closer;
  }

  /** Start a new page: forget the popups of the previous one. */
  beginPage(): void {
    this.urls.clear();
    this.closedCount = 0;
  }

  /** The URLs the current page tried to open windows for, and how many opened windows were closed. */
  opened(): { urls: string[]; closed: number } {
    return { urls: [...this.urls], closed: this.closedCount };
  }

  async detach(): Promise<void> {
    this.browser.off("targetcreated", this.onTarget);
    await this.cdp.detach().catch(() => undefined);
  }

  private async close(target: Target): Promise<void> {
    try {
      const session = await target.createCDPSession();
      await session.send("Page.close");
      this.closedCount += 1;
      logger.debug("browser", "popup window closed", { url: target.url() });
    } catch {
      // closed already (its page closed it, or the tab went away)
    }
  }

  private note(url: string): void {
    if (this.urls.size < MAX_URLS_PER_PAGE) this.urls.add(url);
  }
}
