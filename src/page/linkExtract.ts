import type { Frame, Page } from "puppeteer-core";
import { withTimeout } from "../util/deadline.js";
import { callInEachFrame, callInFrame } from "../util/frameCalls.js";
import { feedLinksInDocument, formLinksInDocument, MAX_FORM_LINKS, MAX_OPTIONS_PER_SELECT } from "./formFeedLinks.js";
import { ALL_LINK_KINDS, type LinkKinds, type LinkSelector } from "./linkSelectors.js";
import { mediaInDocument } from "./mediaSources.js";

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

/** What a loaded page gives in one evaluation per frame: its title, its links, its media files. */
export interface PageRead {
  /** The top frame's document title. */
  title: string;
  /** Every frame's links (selected elements', then GET forms' and feeds' of the wanted kinds), not yet normalized. */
  links: string[];
  /** Every frame's media files that load by themselves (mediaSources.ts), each once. */
  media: string[];
}

/**
 * One frame's read as one script: a single round trip to the browser, not one per kind (title, links, forms,
 * feeds, media were five calls a page). The in-page functions are self-contained, so their text is enough.
 */
function frameScript(selectors: readonly LinkSelector[], kinds: LinkKinds): string {
  const forms = kinds.forms ? `(${formLinksInDocument.toString()})(${MAX_OPTIONS_PER_SELECT}, ${MAX_FORM_LINKS})` : "[]";
  const feeds = kinds.feeds ? `(${feedLinksInDocument.toString()})()` : "[]";
  // Media sources are a help, not the page's links: a page whose media elements cannot be read still gives its links.
  const media = `(() => { try { return (${mediaInDocument.toString()})(); } catch { return []; } })()`;
  return `(() => ({ title: document.title, links: [...(${linksInDocument.toString()})(${JSON.stringify(selectors)}), ...${forms}, ...${feeds}], media: ${media} }))()`;
}

/**
 * The tab's page read in every frame: its links as browsertrix-crawler extracts them (with the GET forms' and
 * feeds' of `kinds`), its title, its media sources. The top frame's failure throws (the page's links would be
 * lost); a subframe that fails or is gone gives nothing (a debug line).
 */
export async function readPage(tab: Page, selectors: readonly LinkSelector[], kinds: LinkKinds = ALL_LINK_KINDS): Promise<PageRead> {
  const script = frameScript(selectors, kinds);
  const main = tab.mainFrame();
  const read = (frame: Frame) => withTimeout(frame.evaluate(script) as Promise<PageRead>, FRAME_DEADLINE_MS, "links not read in time");
  const topRead = callInFrame(main, read);
  // Its failure is thrown once the other frames are read, not left unheard meanwhile.
  topRead.catch(() => undefined);
  const rest = await callInEachFrame(tab.frames().filter((frame) => frame !== main), read, { context: "links", what: "links", url: tab.url() });
  const top = await topRead;
  const links = [...top.links];
  const media = new Set(top.media);
  for (const result of rest) {
    if (result.status !== "fulfilled") continue;
    links.push(...result.value.links);
    for (const url of result.value.media) media.add(url);
  }
  return { title: top.title, links, media: [...media] };
}
