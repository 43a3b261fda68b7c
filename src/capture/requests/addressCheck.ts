import type { CDPSession, Protocol } from "puppeteer-core";
import type { AddressPolicy } from "../../fetch/addressPolicy.js";
import { logger } from "../../log/logger.js";

/** Host names already logged as not resolving (bounded: the log says it once per host, not per request). */
const unresolvedHosts = new Set<string>();

/**
 * The address policy at a tab's request stage: a request to an address the crawler may not fetch, or to a
 * name that does not resolve, is failed before Chromium sends it (then the relay, which connects only to what
 * the policy approves, would refuse it anyway; here the page learns why). Returns whether it was refused.
 */
export async function refuseByAddress(addresses: AddressPolicy, cdp: CDPSession, event: Protocol.Fetch.RequestPausedEvent, url: string): Promise<boolean> {
  const verdict = await addresses.check(url);
  if (verdict.allowed) return false;
  if (verdict.unresolved) {
    const host = loggedHostOf(url);
    if (!unresolvedHosts.has(host) && unresolvedHosts.size < 1000) {
      unresolvedHosts.add(host);
      logger.warn("capture", "request not sent: its host name does not resolve (further requests to this host are not logged)", { url: event.request.url, reason: verdict.reason });
    }
  } else {
    logger.warn("capture", "request blocked: not an address the crawler may fetch", { url: event.request.url, reason: verdict.reason });
  }
  const errorReason = verdict.unresolved ? "NameNotResolved" : "BlockedByClient";
  await cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason }).catch(() => undefined);
  return true;
}

/** The host (and port) an unresolved name is logged once for; the URL itself when it does not parse. */
function loggedHostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
