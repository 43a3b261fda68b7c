// Where a page's links are read from, as data: the options (config/) name these without importing the
// code that reads them (linkExtract.ts, formFeedLinks.ts).

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

/** Which of these links a page's links include (both by default). */
export interface LinkKinds {
  /** --extractFormLinks: the URL each GET form submits with its default values, and with each option of its selects. */
  forms: boolean;
  /** --extractFeedLinks: `<link rel=alternate>` feeds, and the items a feed document lists. */
  feeds: boolean;
}

export const ALL_LINK_KINDS: LinkKinds = { forms: true, feeds: true };
