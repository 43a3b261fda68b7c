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
