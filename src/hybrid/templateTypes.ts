// What the browser showed of a template's pages, and what the crawl is told to do with a page.

/** What one browsed page of a template showed. */
export interface BrowsedObservation {
  pageUrl: string;
  /** Every script URL the page's document names (any site), absolute, as documentReferences gives them. */
  scripts: string[];
  /** GET URLs the browser fetched (answered 2xx or 3xx) that a static pass of the same document would not fetch (its requisites, what its stylesheets name, and the document's redirect chain are taken away already). */
  extraFetches: string[];
  /** Links the browser read that the document's static parse does not name and that would still bring the crawl a page (normalized absolute URLs). */
  extraLinks: string[];
  /**
   * What a static pass of the same document fetches and links by itself (its own URL included): a URL one page's
   * script made that another page's document names is on both pages all the same. Absent in observations kept by
   * an older crawler: nothing is known covered then.
   */
  staticFetches?: string[];
  staticLinks?: string[];
  /**
   * Links the browser read beyond the document's that the crawl had found already (or would not follow) when the page
   * was browsed: on the page all the same, so not page-specific when another page's script made them while they were
   * still new (the first learning page's links are found by the second's turn).
   */
  foundLinks?: string[];
  /** The page's behaviors found anything (links added, clicks, fetches that started after they began). */
  behaviorsFound: boolean;
  /**
   * What the page's scripts looked for in its document (page/queryWatch.ts): selectors it held no match for, and ones
   * it did. Absent in observations kept by an older crawler.
   */
  absentSelectors?: string[];
  presentSelectors?: string[];
}

/** How a page is captured: statically (with what the template's scripts would have fetched and linked), in the browser, or later. */
export type CaptureChoice =
  | { mode: "static"; template: string; fetches: string[]; links: string[] }
  | { mode: "browser"; template: string; purpose: "learn" | "verify" | "guard" | "fallen-back"; reason: string; turn?: VerifyTurn }
  | { mode: "wait"; template: string; retryInMs: number; reason: string };

/**
 * What a verify page holds for its template, handed on when it fails (TemplateBook.verifyFailed): the selectors it
 * explains, and whether it is the template's first verify page.
 */
export interface VerifyTurn {
  selectors: string[];
  first: boolean;
}

/** Of these selectors, the ones the page's document holds a match for (static/selectorMatch.ts). */
export type DocumentSelectors = (selectors: readonly string[]) => string[];

/**
 * What a template's browsed pages taught (learnTemplate), as JSON: what a static pass of another page of the template
 * must add to its document's requisites and links, and what it cannot predict.
 */
export interface LearnedTemplate {
  /** How many browsed pages it was learned from. */
  observations: number;
  /** Every script the browsed pages' documents named, as static/templateKey.ts scriptIdentity gives it (a URL, or `./name` in the page's folder), sorted. */
  scripts: string[];
  /** Extra fetches every browsed page made, the same URL each time. */
  fixedFetches: string[];
  /** Extra fetches made from the page's URL: rule strings (see templateLearning.ts), sorted. */
  fetchRules: string[];
  /** origin + path of extra fetches every browsed page made with a query of its own (beacons, cache busters): not fetched statically, not compared. */
  volatilePaths: string[];
  /** Extra fetches neither fixed, nor made by a rule, nor volatile: a static pass cannot know them. */
  pageSpecificFetches: string[];
  /** Extra links every browsed page had. */
  fixedLinks: string[];
  /** Extra links made from the page's URL: rule strings, sorted. */
  linkRules: string[];
  /** Extra links neither fixed nor made by a rule. */
  pageSpecificLinks: string[];
  /** A browsed page's behaviors found anything. */
  behaviorsFound: boolean;
  /**
   * Selectors the browsed pages' scripts looked for that none of their documents held (Sphinx's `img.toggler`): a page
   * whose document holds one gives those scripts something to act on that no browsed page showed, so it is verified
   * (TemplateBook.choose); once a verify page showed nothing the template lacks, the selector is explained.
   */
  absentSelectors: string[];
}
