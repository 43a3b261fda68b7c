import type { Frame, Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/process.js";
import { ALL_LINK_KINDS, feedLinksInDocument, formLinksInDocument, MAX_FORM_LINKS, MAX_OPTIONS_PER_SELECT, type LinkKinds } from "./formFeedLinks.js";

/**
 * One --selectLinks entry (browsertrix-crawler's `selector->property` or `selector->@attribute`): the
 * elements matching `selector` give a link each, read from their `extract` property, or from their
 * attribute of that name when the property is empty (always from the attribute when `attrOnly`).
 */
export interface LinkSelector {
  selector: string;
  extract: string;
  attrOnly: boolean;
}

/** browsertrix-crawler's default, and the image map areas we always followed. */
export const DEFAULT_LINK_SELECTORS: readonly LinkSelector[] = [
  { selector: "a[href]", extract: "href", attrOnly: false },
  { selector: "area[href]", extract: "href", attrOnly: false },
];

const FRAME_DEADLINE_MS = 10_000;

/** Runs in the page: the selected elements' values, made absolute against the frame's base URL. */
function linksInDocument(selectors: readonly LinkSelector[]): string[] {
  const found: string[] = [];
  for (const { selector, extract, attrOnly } of selectors) {
    for (const element of Array.from(document.querySelectorAll(selector))) {
      let value: unknown = attrOnly ? null : (element as unknown as Record<string, unknown>)[extract];
      if (!value) value = element.getAttribute(extract);
      if (typeof value !== "string" || !value.trim()) continue;
      try {
        found.push(new URL(value.trim(), document.baseURI).href);
      } catch {
        // not a URL: no link
      }
    }
  }
  return found;
}

/** One frame's links: the selected elements', then its GET forms' and feeds' (formFeedLinks.ts) when wanted. */
async function linksInFrame(frame: Frame, selectors: readonly LinkSelector[], kinds: LinkKinds): Promise<string[]> {
  const [selected, forms, feeds] = await Promise.all([
    frame.evaluate(linksInDocument, selectors),
    kinds.forms ? frame.evaluate(formLinksInDocument, MAX_OPTIONS_PER_SELECT, MAX_FORM_LINKS) : [],
    kinds.feeds ? frame.evaluate(feedLinksInDocument) : [],
  ]);
  return [...selected, ...forms, ...feeds];
}

/**
 * The links of the tab's page, in every frame (as browsertrix-crawler extracts them), with the GET forms'
 * and feeds' of `kinds`. The top frame's failure throws (the page's links would be lost); a subframe that
 * fails or is gone gives none.
 */
export async function extractLinks(tab: Page, selectors: readonly LinkSelector[], kinds: LinkKinds = ALL_LINK_KINDS): Promise<string[]> {
  const main = tab.mainFrame();
  const inFrame = (frame: Frame) => withTimeout(linksInFrame(frame, selectors, kinds), FRAME_DEADLINE_MS, "links not read in time");
  const others = tab.frames().filter((frame) => frame !== main && !frame.detached);
  const [top, ...rest] = await Promise.allSettled([inFrame(main), ...others.map(inFrame)]);
  if (top.status === "rejected") throw top.reason;
  const links = [...top.value];
  rest.forEach((result, i) => {
    if (result.status === "fulfilled") links.push(...result.value);
    else logger.debug("links", "links of a frame not read", { frameUrl: others[i].url(), error: errorMessage(result.reason) });
  });
  return links;
}
