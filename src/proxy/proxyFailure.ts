/**
 * Which page-load errors are the proxy's fault, as browsertrix-crawler tells them apart for a seed failing
 * the crawl (--failOnFailedSeed: exit code 21, not 1): connection failures of a proxy or SOCKS server
 * always, a timeout or refused credentials only when a proxy is in use.
 */
const ALWAYS_PROXY = ["net::ERR_PROXY_CONNECTION_FAILED", "net::ERR_TUNNEL_CONNECTION_FAILED"];
// Without a proxy, a crawl's Chromium still connects through the crawler's SOCKS5 gate (fetch/socketGate.ts),
// whose failures are the site's (connection refused, address refused), not a proxy's.
const PROXY_WHEN_PROXIED = ["net::ERR_TIMED_OUT", "net::ERR_INVALID_AUTH_CREDENTIALS", "net::ERR_SOCKS_CONNECTION_FAILED", "net::SOCKS_CONNECTION_HOST_UNREACHABLE", "net::ERR_SOCKS_CONNECTION_HOST_UNREACHABLE"];

export function isProxyFailure(reason: string | null, proxied: boolean): boolean {
  if (!reason) return false;
  if (ALWAYS_PROXY.some((code) => reason.includes(code))) return true;
  return proxied && PROXY_WHEN_PROXIED.some((code) => reason.includes(code));
}

/**
 * The relay (proxy-chain) answers a plain-http request it could not forward (upstream proxy or target
 * unreachable, refused, reset) with its own 590-599 status and a one-word body: that answer is the
 * relay's, not the site's, and must not be archived as the page. No site answers with these.
 */
export function isRelayFailureStatus(status: number): boolean {
  return status >= 590 && status <= 599;
}

/** The page error of a relay failure: named as Chromium names a proxy's, so it counts as the proxy's failure. */
export function relayFailureError(status: number, statusText: string): string {
  return `net::ERR_PROXY_CONNECTION_FAILED: the proxy could not fetch it (${status}${statusText ? ` ${statusText}` : ""})`;
}

/** Fetch.failRequest reasons for the relay's answers about a direct target (no proxy between): as Chromium would have failed it. */
const DIRECT_FAILURE_REASONS: Record<number, "BlockedByClient" | "NameNotResolved" | "ConnectionRefused" | "ConnectionReset" | "ConnectionClosed"> = {
  591: "BlockedByClient",
  593: "NameNotResolved",
  594: "ConnectionRefused",
  595: "ConnectionReset",
  596: "ConnectionClosed",
};

export function directFailureReason(status: number): "BlockedByClient" | "NameNotResolved" | "ConnectionRefused" | "ConnectionReset" | "ConnectionClosed" | "ConnectionFailed" {
  return DIRECT_FAILURE_REASONS[status] ?? "ConnectionFailed";
}
