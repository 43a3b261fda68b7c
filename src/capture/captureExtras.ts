import type { CDPSession, Protocol } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import type { OriginOverrideRule, RateLimitMatchRule } from "./captureRules.js";

/** What a tab's capture does beyond recording (browsertrix-crawler's --serviceWorker, --originOverride, --rateLimitOnMatch, --saveStorage). */
export interface CaptureExtras {
  bypassServiceWorker: boolean;
  originOverride: readonly OriginOverrideRule[];
  rateLimitOnMatch: readonly RateLimitMatchRule[];
  saveStorage: boolean;
  /** The login page of the crawl's --profile (or --loginUrl): a page redirected there has lost its session. */
  loginUrl?: string | null;
}

export const NO_EXTRAS: CaptureExtras = { bypassServiceWorker: true, originOverride: [], rateLimitOnMatch: [], saveStorage: false, loginUrl: null };

/**
 * Whether `url` is the login page `loginUrl`: same origin and path, whatever the query (a login page
 * usually carries where to go back to, `?next=/members/a`) or fragment.
 */
export function isLoginPage(url: string, loginUrl: string): boolean {
  try {
    const a = new URL(url);
    const b = new URL(loginUrl);
    const path = (p: string) => p.replace(/\/+$/, "") || "/";
    return a.origin === b.origin && path(a.pathname) === path(b.pathname);
  } catch {
    return false;
  }
}

/** Types whose text --rateLimitOnMatch reads (browsertrix-crawler's: those it may rewrite). */
const MATCHED_TYPES = new Set(["text/html", "application/json", "text/javascript", "application/javascript", "application/x-javascript"]);
/** Larger bodies are not read as text (browsertrix-crawler's limit too). */
const MAX_MATCHED_SIZE = 25_000_000;

/** The rule a response's body matches (--rateLimitOnMatch), or null. */
export function rateLimitRuleMatched(rules: readonly RateLimitMatchRule[], mime: string, status: number, bytes: Uint8Array): RateLimitMatchRule | null {
  if (!rules.length || !MATCHED_TYPES.has(mime.toLowerCase()) || !bytes.length || bytes.length > MAX_MATCHED_SIZE) return null;
  const applicable = rules.filter((rule) => rule.status === 0 || rule.status === status);
  if (!applicable.length) return null;
  const text = new TextDecoder().decode(bytes);
  return applicable.find((rule) => rule.regex.test(text)) ?? null;
}

/**
 * --originOverride: a request to an overridden origin is sent to the other origin by the browser itself
 * (Fetch.continueRequest with a new URL, which the page does not see); its response is recorded under the
 * URL the page asked for. Keyed by request id, which both stages of one request share. Unlike
 * browsertrix-crawler (which fetches it itself), the Host header names the new origin: Chromium may not
 * change it.
 */
export class OriginRedirects {
  private readonly original = new Map<string, string>();

  constructor(private readonly rules: readonly OriginOverrideRule[]) {}

  /** Where a request for `url` really goes, or null when no rule applies. */
  target(url: string): string | null {
    for (const { from, to } of this.rules) {
      if (url === from || url.startsWith(`${from}/`)) return to + url.slice(from.length);
    }
    return null;
  }

  /** The request `requestId` for `url` is sent to `target`. */
  sent(requestId: string, url: string, target: string): void {
    this.original.set(requestId, url);
    logger.debug("originOverride", "origin overridden", { orig: url, dest: target });
  }

  /** The response stage of a request sent elsewhere: its URL is set back to the one the page asked for. */
  restore(event: Protocol.Fetch.RequestPausedEvent): void {
    const url = this.original.get(event.requestId);
    if (url === undefined) return;
    this.original.delete(event.requestId);
    event.request.url = url;
  }
}

const STORAGE_DEADLINE_MS = 5000;

/**
 * --saveStorage: the page's localStorage and sessionStorage for its origin, as browsertrix-crawler stores
 * them: {"local": [[key, value]...], "session": [...]} as a JSON string; null when both are empty.
 */
export async function readPageStorage(cdp: CDPSession, url: string): Promise<string | null> {
  try {
    const securityOrigin = new URL(url).origin;
    const items = (isLocalStorage: boolean) => cdp.send("DOMStorage.getDOMStorageItems", { storageId: { securityOrigin, isLocalStorage } });
    const deadline = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${STORAGE_DEADLINE_MS / 1000}s`)), STORAGE_DEADLINE_MS).unref());
    const [local, session] = await Promise.race([Promise.all([items(true), items(false)]), deadline]);
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
