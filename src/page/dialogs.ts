import type { Dialog, Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";

/**
 * JavaScript dialogs of a tab, answered as browsertrix-crawler does: an alert, confirm or prompt would
 * hold the page until its deadline, so it is dismissed; "leave this page?" is accepted, except while
 * the behaviors run: then it is refused, so a click of the autoclick behavior (which asks before
 * leaving) does not take the tab off the page being crawled.
 */
export class DialogGuard {
  /** Set while the page's behaviors run. */
  blockUnload = false;
  private dialogs = 0;

  constructor(private readonly tab: Page) {
    tab.on("dialog", (dialog: Dialog) => void this.answer(dialog));
  }

  /** A new page: its own count of dialogs. */
  beginPage(): void {
    this.dialogs = 0;
    this.blockUnload = false;
  }

  private async answer(dialog: Dialog): Promise<void> {
    const unload = dialog.type() === "beforeunload";
    const accept = unload && !this.blockUnload;
    if (!unload) this.dialogs += 1;
    try {
      if (accept) await dialog.accept();
      else await dialog.dismiss();
      // A page opening dialogs in a loop shows up here as a long run of them.
      if (this.dialogs <= 3 || unload) logger.debug("browser", "JavaScript dialog answered", { type: dialog.type(), accepted: accept, url: this.tab.url() });
    } catch (err) {
      logger.debug("browser", "JavaScript dialog not answered", { type: dialog.type(), error: errorMessage(err) });
    }
  }
}
