import type { Browser, Target } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";

const ATTACH_DEADLINE_MS = 10_000;
const watched = new WeakSet<Browser>();

/**
 * --serviceWorker enabled: the pages' service workers run in targets of their own, whose requests no
 * tab's capture sees. Each new one is handed to `attach` (once per browser, whichever tab asks first),
 * which captures what the worker fetches from then on. Its script, fetched by the browser before the
 * worker exists, is handed over as `scriptUrl` to be fetched and stored outside the browser.
 */
export function watchServiceWorkers(browser: Browser, attach: (target: Target, scriptUrl: string) => Promise<void>): void {
  if (watched.has(browser)) return;
  watched.add(browser);
  browser.on("targetcreated", (target: Target) => {
    if (target.type() !== "service_worker") return;
    const scriptUrl = target.url();
    withTimeout(attach(target, scriptUrl), ATTACH_DEADLINE_MS, `no capture of the service worker within ${ATTACH_DEADLINE_MS / 1000}s`).then(
      () => logger.debug("capture", "capturing a service worker's requests", { url: scriptUrl }),
      (err: unknown) => logger.warn("capture", "a service worker's requests are not captured", { url: scriptUrl, error: errorMessage(err) }),
    );
  });
}
