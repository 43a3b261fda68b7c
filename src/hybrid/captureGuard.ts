// Whether a page of a learned template may be captured without a browser.

import { deriveFor, normalizedScript, type LearnedTemplate } from "./templateLearning.js";

const LISTED_AT_MOST = 3;

function firstFew(urls: string[]): string {
  const more = urls.length - LISTED_AT_MOST;
  return urls.slice(0, LISTED_AT_MOST).join(", ") + (more > 0 ? ` (and ${more} more)` : "");
}

/**
 * Static capture is safe for a page when what its template's browsed pages showed covers it: the browser is needed
 * when the page's document names a script no browsed page's document named (cache-busting parameters aside), when the
 * template's behaviors found anything, when the browsed pages fetched or linked URLs a static pass cannot know
 * (page-specific), or when a learned rule cannot be filled in from the page's URL. Otherwise the static pass adds
 * the derived fetches and links.
 */
export function guardChoice(
  learned: LearnedTemplate,
  pageUrl: string,
  documentScripts: string[],
): { static: true; fetches: string[]; links: string[] } | { static: false; reason: string } {
  const known = new Set(learned.scripts);
  const unknownScripts = [...new Set(documentScripts.map((s) => normalizedScript(s, pageUrl) ?? s))].filter((s) => !known.has(s));
  if (unknownScripts.length > 0) return { static: false, reason: `the document names scripts no browsed page of its template named: ${firstFew(unknownScripts)}` };
  if (learned.behaviorsFound) return { static: false, reason: "behaviors found content on the template's browsed pages" };
  if (learned.pageSpecificFetches.length > 0) return { static: false, reason: `the template's browsed pages fetched URLs of their own: ${firstFew(learned.pageSpecificFetches)}` };
  if (learned.pageSpecificLinks.length > 0) return { static: false, reason: `the template's browsed pages had links of their own: ${firstFew(learned.pageSpecificLinks)}` };
  const derived = deriveFor(learned, pageUrl);
  if ("underivable" in derived) return { static: false, reason: derived.underivable };
  return { static: true, fetches: derived.fetches, links: derived.links };
}
