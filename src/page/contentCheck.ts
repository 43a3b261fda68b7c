import type { Page } from "puppeteer-core";

/**
 * The function pages and behaviors call to fail the crawl on what a page shows (e.g. logged out):
 * browsertrix-crawler's BxFunctionBindings.ContentCheckFailed, with --failOnContentCheck.
 */
export const CONTENT_CHECK_BINDING = "__bx_contentCheckFailed";

/**
 * The content-check function of one tab. A call counts from the start of a page attempt to its end
 * (browsertrix-crawler counts only from the load through the behaviors; here a script that calls it at
 * load is not missed when the network was already quiet, and a call's CDP event may arrive late).
 */
export class ContentCheck {
  private open = false;
  private reason: string | undefined;

  static async attach(tab: Page): Promise<ContentCheck> {
    const check = new ContentCheck();
    await tab.exposeFunction(CONTENT_CHECK_BINDING, (reason: unknown) => check.called(reason));
    return check;
  }

  /** A new page attempt: no failure yet, calls counted until `listen(false)`. */
  beginPage(): void {
    this.open = true;
    this.reason = undefined;
  }

  listen(on: boolean): void {
    this.open = on;
  }

  /** Why the page failed its content check, if it called the function while it counted. */
  get failure(): string | undefined {
    return this.reason;
  }

  private called(reason: unknown): void {
    if (!this.open || this.reason !== undefined) return;
    this.reason = (typeof reason === "string" ? reason : JSON.stringify(reason) ?? "").slice(0, 500) || "no reason given";
  }
}
