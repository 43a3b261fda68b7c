// The request headers Chromium sends for a page's navigation and for each requisite its document names, so a fetch
// made without a browser carries what the browser would have sent.

import { defaultPolicyReferer } from "../util/referrerPolicy.js";
import type { RequisiteKind } from "./documentReferences.js";
import { siteOf } from "./templateKey.js";

/** The Fetch standard's request destinations a document's requisites use. */
export type FetchDestination =
  | "document" | "iframe" | "frame" | "object" | "embed" | "image" | "style" | "script" | "font" | "manifest" | "video" | "audio" | "track" | "empty";

export interface BrowserRequest {
  url: string;
  kind: RequisiteKind | "document";
  /** The URL of the document that names the requisite (for a navigation: the page it was followed from, if any). */
  referrer?: string;
  /**
   * The origin the request is made from, when it is not the referrer's (e.g. a stylesheet's @import). For a
   * top-level navigation only this makes it page-initiated: with a referrer alone it is the browser's own (puppeteer's
   * goto with a referer), Sec-Fetch-Site none and Sec-Fetch-User ?1.
   */
  initiatorOrigin?: string;
  /** Where a kind is ambiguous: a preload's `as`, audio or track for media, frame for <frame>, embed. */
  destination?: FetchDestination;
  /** The request is made in cors mode: `<script type=module>`, modulepreload, a `crossorigin` attribute. */
  cors?: boolean;
}

export interface BrowserIdentity {
  /** What Chromium sends as User-Agent (puppeteer's `browser.userAgent()`, or the crawl's override). */
  userAgent: string;
  /** Chromium's default, with no --lang and no LANG set, is "en-US,en;q=0.9". */
  acceptLanguage?: string;
  /** The user-agent client hints, when known (e.g. from `navigator.userAgentData`); else derived from userAgent. */
  secChUa?: { brands?: readonly { brand: string; version: string }[]; platform?: string; mobile?: boolean };
}

const NAVIGATION_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const IMAGE_ACCEPT = "image/jxl,image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";
const STYLE_ACCEPT = "text/css,*/*;q=0.1";
const DEFAULT_ACCEPT_LANGUAGE = "en-US,en;q=0.9";

/** Each kind's destination when the request does not name one. */
const KIND_DESTINATION: Record<RequisiteKind | "document", FetchDestination> = {
  document: "document",
  frame: "iframe",
  image: "image",
  icon: "image",
  stylesheet: "style",
  script: "script",
  font: "font",
  manifest: "manifest",
  media: "video",
  // <object data>, the commoner of the two plugin elements; <embed> passes destination "embed".
  other: "object",
  // A preload's destination is its `as`: callers pass it; without one it is a fetch().
  preload: "empty",
};

const NAVIGATING: ReadonlySet<FetchDestination> = new Set(["document", "iframe", "frame", "object", "embed"]);
const CORS_BY_DEFAULT: ReadonlySet<FetchDestination> = new Set(["font", "manifest"]);
const MEDIA: ReadonlySet<FetchDestination> = new Set(["video", "audio"]);

function acceptFor(destination: FetchDestination): string {
  if (NAVIGATING.has(destination)) return NAVIGATION_ACCEPT;
  if (destination === "image") return IMAGE_ACCEPT;
  if (destination === "style") return STYLE_ACCEPT;
  return "*/*";
}

/** https, wss, and loopback over http: what Chromium counts as potentially trustworthy. */
function isTrustworthy(url: URL): boolean {
  if (url.protocol === "https:" || url.protocol === "wss:") return true;
  const host = url.hostname;
  return host === "localhost" || host.endsWith(".localhost") || /^127\.\d+\.\d+\.\d+$/.test(host) || host === "[::1]";
}

/** Sec-Fetch-Site: the request's URL against the origin it is made from (schemeful site: scheme and site). */
function fetchSite(target: URL, initiator: URL): "same-origin" | "same-site" | "cross-site" {
  if (target.origin === initiator.origin) return "same-origin";
  return target.protocol === initiator.protocol && siteOf(target.hostname) === siteOf(initiator.hostname) ? "same-site" : "cross-site";
}

/**
 * Chromium's GREASE brand for a major version: "Not" and "A" and "Brand" joined by two of eleven characters, a
 * version of 8, 99 or 24, each chosen by the major version, and the two brands ordered by its parity.
 */
function derivedBrands(userAgent: string): { brand: string; version: string }[] | undefined {
  const major = /(?:Headless)?Chrom(?:e|ium)\/(\d+)/.exec(userAgent)?.[1];
  if (!major) return undefined;
  const seed = Number(major);
  const chars = [" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_"];
  const grease = { brand: `Not${chars[seed % chars.length]}A${chars[(seed + 1) % chars.length]}Brand`, version: ["8", "99", "24"][seed % 3]! };
  const chromium = { brand: "Chromium", version: major };
  return seed % 2 === 0 ? [grease, chromium] : [chromium, grease];
}

function derivedPlatform(userAgent: string): string {
  if (/Android/.test(userAgent)) return "Android";
  if (/CrOS/.test(userAgent)) return "Chrome OS";
  if (/Windows/.test(userAgent)) return "Windows";
  if (/Macintosh|Mac OS X/.test(userAgent)) return "macOS";
  if (/Linux|X11/.test(userAgent)) return "Linux";
  return "Unknown";
}

/** The three low-entropy client hints, or none when the user agent names no Chromium version. */
function clientHints(browser: BrowserIdentity): { ua: string; mobile: string; platform: string } | undefined {
  const brands = browser.secChUa?.brands ?? derivedBrands(browser.userAgent);
  if (!brands) return undefined;
  return {
    ua: brands.map(({ brand, version }) => `"${brand}";v="${version}"`).join(", "),
    mobile: (browser.secChUa?.mobile ?? / Mobile/.test(browser.userAgent)) ? "?1" : "?0",
    platform: `"${browser.secChUa?.platform ?? derivedPlatform(browser.userAgent)}"`,
  };
}

/**
 * The request headers Chromium sends for `request`, in its order, with its values, as the server receives them.
 *
 * Format: name/value pairs in wire order, names spelled as Chromium spells them over HTTP/1.1 (the client hints
 * lower case, the rest capitalised; HTTP/2 and HTTP/3 lower-case every name on the wire). Not included: Host and Connection (the HTTP client's), Cookie (from the crawl's profile, added
 * by whoever holds the cookie jar), and Pragma/Cache-Control (sent only when the cache is disabled or on reload).
 *
 * Checked against Chromium 156 (Debian's, headless, its own user agent, no --lang): see the test for the cases.
 * Not checked there, so written from the standards: a page-initiated top-level navigation (`initiatorOrigin`), a cross-origin
 * manifest, `<frame>`/`<embed>`, `<track>`, prefetch (Chromium adds Sec-Purpose), crossorigin=use-credentials,
 * an insecure page's requests to a trustworthy URL, and another major version's GREASE brand order.
 *
 * What decides each header:
 * - Destination and mode: the kind's destination unless `request.destination` names one; navigations (document,
 *   iframe/frame, object/embed) are mode navigate with Upgrade-Insecure-Requests: 1 and the HTML Accept; fonts and
 *   the manifest are cors, as is anything with `request.cors` (module scripts, modulepreload, crossorigin);
 *   everything else no-cors. Cors requests carry Origin (the initiator's origin), except a same-origin manifest,
 *   which Chromium fetches without one.
 * - Sec-Fetch-* and the sec-ch-ua client hints go only to potentially trustworthy URLs (https, and loopback and
 *   localhost over http); Accept-Encoding is "gzip, deflate, br, zstd" to those, "gzip, deflate" to the rest, and
 *   "identity" with Range: bytes=0- for audio and video.
 * - Sec-Fetch-Site: "none" for a top-level navigation without `initiatorOrigin` (typed, or the crawler's goto, with
 *   or without a referer), with Sec-Fetch-User: ?1; else the request URL against the initiator's origin (the referrer's unless `initiatorOrigin` is given),
 *   same-site compared by scheme and site (last two host labels, an IP address its own site, as templateKey.ts).
 *   A cross-site request that would carry cookies (no-cors or navigate) adds Sec-Fetch-Storage-Access: none (no
 *   storage access granted: a crawler grants none).
 * - Referer: strict-origin-when-cross-origin, the default: the full referrer (fragment and credentials removed)
 *   same-origin, its origin and "/" cross-origin, none from https to http.
 * - sec-ch-ua: from `browser.secChUa.brands` if given, else "Chromium" with the user agent's major version and
 *   Chromium's GREASE brand for that version; sec-ch-ua-platform from the user agent's OS token.
 * - Order: a navigation sends the client hints first, a subresource sends Origin, sec-ch-ua-platform, User-Agent,
 *   sec-ch-ua, sec-ch-ua-mobile; without hints, User-Agent then Origin. Then Accept, Sec-Fetch-Site, -Mode,
 *   (-User), -Dest, (-Storage-Access), Referer, Accept-Encoding, Accept-Language, Range.
 */
export function browserRequestHeaders(request: BrowserRequest, browser: BrowserIdentity): [string, string][] {
  const target = new URL(request.url);
  const destination = request.destination ?? KIND_DESTINATION[request.kind];
  const navigating = NAVIGATING.has(destination);
  const referrer = request.referrer ? new URL(request.referrer) : undefined;
  // A top-level navigation the crawler starts is the browser's own, whatever Referer it carries.
  const initiator = request.initiatorOrigin ? new URL(request.initiatorOrigin) : destination === "document" ? undefined : referrer;
  const mode = navigating ? "navigate" : request.cors || CORS_BY_DEFAULT.has(destination) ? "cors" : "no-cors";
  const trustworthy = isTrustworthy(target);
  const hints = trustworthy ? clientHints(browser) : undefined;
  const sameOriginManifest = destination === "manifest" && initiator?.origin === target.origin;
  const origin = mode === "cors" && initiator && !sameOriginManifest ? initiator.origin : undefined;
  const userNavigation = destination === "document" && !initiator;
  const site = initiator ? fetchSite(target, initiator) : "none";

  const headers: [string, string][] = [];
  if (navigating) {
    if (hints) headers.push(["sec-ch-ua", hints.ua], ["sec-ch-ua-mobile", hints.mobile], ["sec-ch-ua-platform", hints.platform]);
    headers.push(["Upgrade-Insecure-Requests", "1"], ["User-Agent", browser.userAgent]);
  } else if (hints) {
    if (origin) headers.push(["Origin", origin]);
    headers.push(["sec-ch-ua-platform", hints.platform], ["User-Agent", browser.userAgent], ["sec-ch-ua", hints.ua], ["sec-ch-ua-mobile", hints.mobile]);
  } else {
    headers.push(["User-Agent", browser.userAgent]);
    if (origin) headers.push(["Origin", origin]);
  }
  headers.push(["Accept", acceptFor(destination)]);
  if (trustworthy) {
    headers.push(["Sec-Fetch-Site", site], ["Sec-Fetch-Mode", mode]);
    if (userNavigation) headers.push(["Sec-Fetch-User", "?1"]);
    headers.push(["Sec-Fetch-Dest", destination]);
    // Cross-site with cookies (credentials "include": no-cors and navigations): no storage access granted.
    if (site === "cross-site" && mode !== "cors") headers.push(["Sec-Fetch-Storage-Access", "none"]);
  }
  const referer = referrer && defaultPolicyReferer(referrer.href, target.href);
  if (referer) headers.push(["Referer", referer]);
  const media = MEDIA.has(destination);
  headers.push(["Accept-Encoding", media ? "identity" : trustworthy ? "gzip, deflate, br, zstd" : "gzip, deflate"]);
  headers.push(["Accept-Language", browser.acceptLanguage ?? DEFAULT_ACCEPT_LANGUAGE]);
  if (media) headers.push(["Range", "bytes=0-"]);
  return headers;
}
