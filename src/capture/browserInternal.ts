import type { Protocol } from "puppeteer-core";

/**
 * Traffic the browser makes for itself, not for the page's content, which is never recorded:
 * CORS preflights (OPTIONS asking for permission; the real request follows and is recorded), a
 * favicon the browser probed for on its own and did not find, and a redirect the browser made up itself
 * (internalRedirectReason): no server sent it, and replay must not show it as the URL's answer.
 */
export function isBrowserInternal(event: Protocol.Fetch.RequestPausedEvent): boolean {
  const { request } = event;
  if (internalRedirectReason(event.responseHeaders ?? []) !== null) return true;
  const preflight = event.resourceType === "Preflight" ||
    (request.method === "OPTIONS" && Object.keys(request.headers).some((n) => n.toLowerCase() === "access-control-request-method"));
  if (preflight) return true;
  const status = event.responseStatusCode ?? 0;
  return event.resourceType === "Other" && new URL(request.url).pathname === "/favicon.ico" && (status < 200 || status >= 300);
}

/**
 * The id the tab's Network domain reports a paused request under; null for a fetch the browser makes for itself
 * outside the page's loaders (an OpenSearch description it reads in the background): the Network domain never
 * reports that one (no headers sent, no response, no end of its load), so nothing may wait for such an event.
 * Such a fetch is stored if its answer comes while the page lasts, and never holds the page's end.
 */
export function networkIdOf(event: Protocol.Fetch.RequestPausedEvent): string | null {
  return event.networkId ?? null;
}

/**
 * Why the browser redirected a request by itself, without asking any server (`HSTS`, `HttpsUpgrades`: an http://
 * URL loaded as https://), from the header Chromium puts on the 307 it makes up; null for a server's answer.
 */
export function internalRedirectReason(headers: Protocol.Network.Headers | Protocol.Fetch.HeaderEntry[]): string | null {
  const entries = Array.isArray(headers) ? headers.map(({ name, value }) => [name, value] as const) : Object.entries(headers);
  const reason = entries.find(([name]) => name.toLowerCase() === "non-authoritative-reason");
  return reason ? String(reason[1]) : null;
}
