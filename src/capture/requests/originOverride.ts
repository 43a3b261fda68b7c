import type { Protocol } from "puppeteer-core";
import { logger } from "../../log/logger.js";
import type { OriginOverrideRule } from "../captureRules.js";

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
