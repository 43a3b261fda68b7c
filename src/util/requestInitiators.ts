import type { Protocol } from "puppeteer-core";

/**
 * Who made a request: the page, the crawler's scripts in it, or the browser for itself. Only the page's own
 * requests say whether it is still loading.
 *
 * The names the crawler's own scripts in a page go by (their `//# sourceURL`), so that a request one of them
 * makes is told from the page's: the behaviors' autofetch fetching every srcset candidate and stylesheet
 * image is the crawler capturing more, not the page loading more, and nothing waits for it to go quiet (it
 * is captured all the same: the autofetch sweep awaits its fetches, a page's drain what is in flight).
 * Not URLs a page could load a script from: no scheme, no slash.
 */
export const IN_PAGE_SCRIPT_NAMES = {
  /** browsertrix-behaviors and custom behaviors. */
  behaviors: "warc-crawler-behaviors.js",
  /** The autoscroll's watch of timers and requests, which wraps fetch and XMLHttpRequest: a page's calls pass through it. */
  pageWatch: "warc-crawler-page-watch.js",
  /** Hybrid capture's watch of the selectors a page's scripts look for (page/queryWatch.ts). */
  queryWatch: "warc-crawler-query-watch.js",
} as const;

/** `script`, named `name` in stack traces and in the initiator of each request it makes. */
export function namedScript(script: string, name: string): string {
  return `${script}\n//# sourceURL=${name}`;
}

/**
 * Whether a request was made by the crawler's behaviors rather than by the page: the innermost frame of the
 * stack that made it, past the page watch's wrappers, is the behaviors' script. (A page's handler run by a
 * behavior's click sits above it: that request is the page's.)
 */
export function madeByBehaviors(initiator: Protocol.Network.Initiator | undefined): boolean {
  if (initiator?.type !== "script") return false;
  const frame = initiator.stack?.callFrames.find((call) => call.url !== IN_PAGE_SCRIPT_NAMES.pageWatch);
  return frame?.url === IN_PAGE_SCRIPT_NAMES.behaviors;
}

/**
 * Whether the browser made a request for itself, outside the page's loaders: the tab's icon and the web app
 * manifest, which it reads once the page has loaded (the page's `<link rel=icon>`, `<link rel=manifest>`,
 * /favicon.ico). Never content the page shows.
 */
export function madeByBrowserItself(resourceType: string, initiator: Protocol.Network.Initiator | undefined): boolean {
  return BROWSER_OWN_TYPES.has(resourceType.toLowerCase()) && initiator?.type === "other";
}

const BROWSER_OWN_TYPES: ReadonlySet<string> = new Set(["other", "manifest"]);

/** Whether the page made a request: neither the crawler's behaviors nor the browser for itself. */
export function madeByPage(resourceType: string, initiator: Protocol.Network.Initiator | undefined): boolean {
  return !madeByBehaviors(initiator) && !madeByBrowserItself(resourceType, initiator);
}
