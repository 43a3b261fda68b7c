import type { Protocol } from "puppeteer-core";

/**
 * Traffic the browser makes for itself, not for the page's content, which is never recorded:
 * CORS preflights (OPTIONS asking for permission; the real request follows and is recorded) and a
 * favicon the browser probed for on its own and did not find.
 */
export function isBrowserInternal(event: Protocol.Fetch.RequestPausedEvent): boolean {
  const { request } = event;
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
