import type { CDPSession, Page, Protocol } from "puppeteer-core";
import { logger } from "../log/logger.js";

/** Most popup URLs kept per page (a page opening windows in a loop must not fill memory). */
const MAX_URLS_PER_PAGE = 1000;

/**
 * Windows a tab's page opens (window.open, from any of its frames, with or without noopener; links and
 * forms with a target) are closed the moment the browser reports them, before they load anything in the
 * usual case: left open they would keep running outside the capture and outside --minHostInterval,
 * polling the site and holding memory for the rest of the crawl. The URL each was opened for is kept,
 * to be followed as one of the page's links (if in scope).
 */
export class PopupCloser {
  private readonly urls = new Set<string>();
  private closedCount = 0;

  private constructor(
    private readonly cdp: CDPSession,
    private readonly tabTargetId: string,
  ) {}

  static async attach(tab: Page): Promise<PopupCloser> {
    const cdp = await tab.createCDPSession();
    const { targetInfo } = await cdp.send("Target.getTargetInfo");
    const closer = new PopupCloser(cdp, targetInfo.targetId);
    cdp.on("Page.windowOpen", (event: Protocol.Page.WindowOpenEvent) => {
      if (closer.urls.size < MAX_URLS_PER_PAGE) closer.urls.add(event.url);
    });
    cdp.on("Target.targetCreated", (event: Protocol.Target.TargetCreatedEvent) => closer.onTargetCreated(event.targetInfo));
    await cdp.send("Page.enable");
    await cdp.send("Target.setDiscoverTargets", { discover: true });
    return closer;
  }

  /** Start a new page: forget the popups of the previous one. */
  beginPage(): void {
    this.urls.clear();
    this.closedCount = 0;
  }

  /** The URLs the current page opened windows for, and how many windows were closed. */
  opened(): { urls: string[]; closed: number } {
    return { urls: [...this.urls], closed: this.closedCount };
  }

  async detach(): Promise<void> {
    await this.cdp.detach().catch(() => undefined);
  }

  private onTargetCreated(target: Protocol.Target.TargetInfo): void {
    // Chromium names the opener even of a noopener window; other tabs' popups are their closers' business.
    if (target.type !== "page" || target.openerId !== this.tabTargetId) return;
    void this.cdp.send("Target.closeTarget", { targetId: target.targetId }).then(
      () => {
        this.closedCount += 1;
        logger.debug("browser", "popup window closed", { url: target.url || null });
      },
      () => undefined,
    );
  }
}
