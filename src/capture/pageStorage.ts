import type { CDPSession } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";

const STORAGE_DEADLINE_MS = 5000;

/**
 * --saveStorage: the page's localStorage and sessionStorage for its origin, as browsertrix-crawler stores
 * them: {"local": [[key, value]...], "session": [...]} as a JSON string; null when both are empty.
 */
export async function readPageStorage(cdp: CDPSession, url: string): Promise<string | null> {
  try {
    const securityOrigin = new URL(url).origin;
    const items = (isLocalStorage: boolean) => cdp.send("DOMStorage.getDOMStorageItems", { storageId: { securityOrigin, isLocalStorage } });
    const [local, session] = await withTimeout(Promise.all([items(true), items(false)]), STORAGE_DEADLINE_MS, `no answer within ${STORAGE_DEADLINE_MS / 1000}s`);
    if (!local.entries.length && !session.entries.length) return null;
    return JSON.stringify({ local: local.entries, session: session.entries });
  } catch (err) {
    logger.warn("capture", "cannot read the page's localStorage/sessionStorage", { url, error: errorMessage(err) });
    return null;
  }
}

/**
 * Holds a page document's exchange until the page is loaded (--saveStorage): its storage is only known
 * then. Settled by the page worker after the load, or with nothing when the attempt ends first.
 */
export class StorageGate {
  private settle: (storage: string | null) => void = () => undefined;
  readonly storage = new Promise<string | null>((resolve) => (this.settle = resolve));

  done(storage: string | null): void {
    this.settle(storage);
  }
}
