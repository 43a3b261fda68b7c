/**
 * The kinds a failed page attempt is counted under (crawler_page_fetch_errors_total{kind}): a fixed, small
 * set, so that the label stays bounded whatever the error text says (it holds URLs, hosts, statuses).
 */
export const FAILURE_KINDS = [
  "dns", "connection_refused", "connection_reset", "timeout", "tls", "address_refused", "proxy",
  "http_status", "rate_limited", "logged_out", "not_stored", "crawler", "other",
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

// First match wins: a TLS error that says "timed out" is still TLS.
const RULES: [RegExp, FailureKind][] = [
  [/^rate limited:/, "rate_limited"],
  [/^logged out:/, "logged_out"],
  [/^invalid status: HTTP \d+/, "http_status"],
  [/^crawler error:/, "crawler"],
  [/net::ERR_(CERT_|SSL_|BAD_SSL|TLS)/, "tls"],
  [/net::ERR_BLOCKED_BY_CLIENT|address refused|forbidden address/i, "address_refused"],
  [/net::ERR_NAME_NOT_RESOLVED|net::ERR_NAME_RESOLUTION_FAILED|does not resolve/i, "dns"],
  [/net::ERR_CONNECTION_REFUSED/, "connection_refused"],
  [/net::ERR_(CONNECTION_RESET|CONNECTION_CLOSED|EMPTY_RESPONSE|CONNECTION_ABORTED|CONNECTION_FAILED|ADDRESS_UNREACHABLE|SOCKS_CONNECTION_)/, "connection_reset"],
  [/net::ERR_(TIMED_OUT|CONNECTION_TIMED_OUT)|timeout|timed out|did not finish within/i, "timeout"],
  [/could not be stored|no document captured|^truncated:/, "not_stored"],
];

/**
 * The kind of a failed page attempt, from its error text; `proxyFailure`: the proxy's fault, as
 * proxy/proxyFailure.ts tells (a timeout is the proxy's only when a proxy is in use).
 */
export function failureKind(reason: string | null, proxyFailure = false): FailureKind {
  if (proxyFailure) return "proxy";
  if (!reason) return "other";
  for (const [pattern, kind] of RULES) if (pattern.test(reason)) return kind;
  return "other";
}
