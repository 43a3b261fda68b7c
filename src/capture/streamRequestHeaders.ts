/**
 * The request headers a stream's file is fetched with outside the browser: those the page's player would send,
 * taken from its manifest's request. A stream's files are often on another host (a CDN): credentials stay with
 * the manifest's origin, and Referer and Origin are what a browser sends for a player's fetch (CORS mode,
 * default referrer policy strict-origin-when-cross-origin).
 */

import { defaultPolicyReferer } from "../util/referrerPolicy.js";

/** Sent with every file, whatever its host (the site may check them). */
const ALWAYS_CARRIED = new Set(["user-agent", "accept-language"]);

/** The manifest's request, as the browser sent it. */
export interface ManifestRequest {
  url: string;
  headers: readonly [string, string][];
}

/**
 * The headers for one file of the stream. Cookie and Authorization go only to the manifest's origin; there the
 * Cookie is `jarCookies` (the browser's cookies for the file's URL, "" for none) when known, else the manifest's.
 * Referer: the whole referrer to its own origin, its origin alone elsewhere, none from https to http. Origin: the
 * player's origin, to another origin only (a same-origin GET carries none).
 */
export function streamFileHeaders(manifest: ManifestRequest, fileUrl: string, jarCookies: string | null): [string, string][] {
  const file = originOf(fileUrl);
  const sameOrigin = file !== null && file === originOf(manifest.url);
  const named = (name: string) => manifest.headers.find(([n]) => n.toLowerCase() === name);
  const headers: [string, string][] = manifest.headers.filter(([name]) => ALWAYS_CARRIED.has(name.toLowerCase())).map(([n, v]) => [n, v]);
  if (sameOrigin) {
    const authorization = named("authorization");
    if (authorization) headers.push([authorization[0], authorization[1]]);
    const cookie = jarCookies ?? named("cookie")?.[1] ?? "";
    if (cookie) headers.push([named("cookie")?.[0] ?? "Cookie", cookie]);
  }
  const referer = named("referer");
  const sentReferer = referer ? defaultPolicyReferer(referer[1], fileUrl) : null;
  if (referer && sentReferer) headers.push([referer[0], sentReferer]);
  const origin = named("origin");
  const player = origin?.[1] ?? (referer ? originOf(referer[1]) : null);
  if (player && player !== file) headers.push([origin?.[0] ?? "Origin", player]);
  return headers;
}

function originOf(url: string): string | null {
  try {
    const origin = new URL(url).origin;
    return origin === "null" ? null : origin;
  } catch {
    return null;
  }
}

/** A Cookie header's value for cookies the browser reports (CDP Network.getCookies): longer paths first, as RFC 6265 orders them. */
export function cookieHeader(cookies: readonly { name: string; value: string; path: string }[]): string {
  return [...cookies].sort((a, b) => b.path.length - a.path.length).map(({ name, value }) => (name ? `${name}=${value}` : value)).join("; ");
}
