import type { CDPSession } from "puppeteer-core";
import { withTimeout } from "../util/deadline.js";

/** A page that started or ended no request in this long before its scripts stopped was quiet. */
export const QUIET_AT_END_MS = 400;
/** A browser that does not confirm within this is not waited for (a page's requests are refused all the same). */
const SCRIPTS_DEADLINE_MS = 2000;

/**
 * Whether a tab's scripts run. A page's end stops them (Emulation.setScriptExecutionDisabled), so a page that
 * polls or ticks starts nothing new and no behavior of it runs on; they run again for the tab's next page.
 * Not Page.setWebLifecycleState "frozen": a frozen tab never renders again (no animation frames, no observers).
 */
export class PageScripts {
  /** Stopped by a page's end, whose document still shows. */
  stopped = false;
  /**
   * That page was quiet when it ended (no request for QUIET_AT_END_MS, none refused): the next page may
   * replace it in place. One that was still sending requests goes to about:blank first, or it could send one
   * once scripts run again, before the next page replaces it (about:blank swaps the renderer: ~0.1 s a page).
   */
  endedQuiet = false;

  constructor(private readonly cdp: CDPSession) {}

  async stop(quiet: boolean): Promise<void> {
    this.stopped = true;
    this.endedQuiet = quiet;
    await withTimeout(this.cdp.send("Emulation.setScriptExecutionDisabled", { value: true }), SCRIPTS_DEADLINE_MS, "stop scripts").catch(() => undefined);
  }

  /** Scripts run again; the ended page's document must be gone first, or it would go on polling. */
  async allow(): Promise<void> {
    await withTimeout(this.cdp.send("Emulation.setScriptExecutionDisabled", { value: false }), SCRIPTS_DEADLINE_MS, "allow scripts");
    this.stopped = false;
  }
}
