/**
 * Links a page has that are no a[href]: the URLs its GET forms submit (--extractFormLinks) and its RSS, Atom
 * and JSON feeds and the pages they list (--extractFeedLinks). Both functions run in the page (puppeteer
 * serializes them), so each holds everything it uses.
 */

/**
 * Options of one select tried per form select: a select is often a site's only menu (browsertrix-crawler
 * #702), but one with thousands of entries (countries, dates) would flood the queue.
 */
export const MAX_OPTIONS_PER_SELECT = 100;
/** Form URLs taken from one document at most (a page of a thousand item forms must not fill memory). */
export const MAX_FORM_LINKS = 2000;

/**
 * Runs in the page: for each GET form without a password field, the URL a submission without a submitter
 * goes to (the form data set as the browser builds it, in place of the action's query), then the same with
 * each other option of each single select. File inputs are left out; javascript: actions give nothing.
 *
 * A search box gives no new page: a form whose default submission carries nothing but empty text-like fields
 * (at least one) and hidden ones. Submitted to the page itself (its URL without query is the page's without
 * query) it is the same page again with `?q=` added, so it gives no link: on a site with one on every page
 * (mdBook's searchbar, rustdoc's) that would be a twin of every page. Submitted elsewhere it gives the
 * action's URL as usual, which is the same from every page of the site, so the queue holds it once.
 */
export function formLinksInDocument(maxOptionsPerSelect: number, maxLinks: number): string[] {
  const found = new Set<string>();
  // Input types that are no free text (every other type is, an unknown one reads as "text"): they submit a
  // value of their own (checkbox, radio, range, color) or nothing here (hidden is counted apart, file, buttons).
  const NOT_TEXT = ["hidden", "checkbox", "radio", "file", "submit", "image", "reset", "button", "range", "color"];
  /** Whether the form's default submission adds only empty text-like fields (one at least) and hidden ones. */
  const isSearchBox = (controls: Element[]): boolean => {
    let empty = 0;
    for (const control of controls) {
      // What the form data set leaves out: unnamed and disabled controls (a disabled fieldset's too), buttons.
      if (!control.getAttribute("name") || control.matches(":disabled")) continue;
      if (control instanceof HTMLButtonElement || control instanceof HTMLFieldSetElement || control instanceof HTMLOutputElement || control instanceof HTMLObjectElement) continue;
      if (control instanceof HTMLInputElement) {
        if (["hidden", "file", "submit", "image", "reset", "button"].includes(control.type)) continue;
        if ((control.type === "checkbox" || control.type === "radio") && !control.checked) continue;
      }
      const text = control instanceof HTMLTextAreaElement || (control instanceof HTMLInputElement && !NOT_TEXT.includes(control.type));
      // A select, a checked box, a filled field, a custom control: a real value, so a page of its own.
      if (!text || (control as HTMLInputElement | HTMLTextAreaElement).value !== "") return false;
      empty++;
    }
    return empty > 0;
  };
  for (const form of Array.from(document.forms)) {
    if (found.size >= maxLinks) break;
    // Attributes, not properties: a control named "action" or "method" shadows form.action / form.method.
    const method = (form.getAttribute("method") ?? "get").trim().toLowerCase();
    if (method === "post" || method === "dialog") continue;
    const controls = Array.from(form.elements);
    if (controls.some((control) => control instanceof HTMLInputElement && control.type === "password")) continue;
    const actionText = (form.getAttribute("action") ?? "").trim();
    let action: URL;
    try {
      // An empty action submits to the document's own URL (not its base URL), as the browser does.
      action = actionText ? new URL(actionText, document.baseURI) : new URL(document.URL);
    } catch {
      continue;
    }
    if (action.protocol === "javascript:") continue;
    if (isSearchBox(controls)) {
      const withoutQuery = (href: string): string => {
        const url = new URL(href);
        url.search = "";
        url.hash = "";
        return url.href;
      };
      if (withoutQuery(action.href) === withoutQuery(document.URL)) continue;
    }
    const submitted = (): void => {
      let data: FormData;
      try {
        data = new FormData(form);
      } catch {
        return; // the form is being submitted by the page right now
      }
      const fields: [string, string][] = [];
      data.forEach((value, name) => {
        if (typeof value === "string") fields.push([name, value]);
      });
      const url = new URL(action.href);
      url.search = new URLSearchParams(fields).toString();
      if (found.size < maxLinks) found.add(url.href);
    };
    submitted();
    for (const select of controls) {
      if (!(select instanceof HTMLSelectElement) || select.multiple || select.disabled || !select.name) continue;
      const chosen = select.selectedIndex;
      const options = Array.from(select.options).slice(0, maxOptionsPerSelect);
      try {
        options.forEach((option, i) => {
          if (i === chosen || option.disabled) return;
          select.selectedIndex = i;
          submitted();
        });
      } finally {
        // Set back at once: the page's own scripts, screenshots and text see it as it was.
        select.selectedIndex = chosen;
      }
    }
  }
  return [...found];
}

/**
 * Runs in the page: the feeds its `<link rel=alternate>` name, and, when the document is itself a feed, the
 * pages it lists (RSS and RSS 1.0 item links, Atom entry alternate links, JSON Feed item urls). Chromium
 * shows RSS and Atom sent as such as plain text and XML sent as text/xml in its XML viewer (the source kept
 * in #webkit-xml-viewer-source-xml), so the feed is read from what the page shows, never fetched again.
 */
export function feedLinksInDocument(): string[] {
  const FEED_TYPES = ["application/rss+xml", "application/atom+xml", "application/feed+json"];
  const ATOM = "http://www.w3.org/2005/Atom";
  const found = new Set<string>();
  const add = (value: string | null | undefined): void => {
    if (!value || !value.trim()) return;
    try {
      found.add(new URL(value.trim(), document.baseURI).href);
    } catch {
      // not a URL: no link
    }
  };
  for (const link of Array.from(document.querySelectorAll("link[href]"))) {
    const rel = (link.getAttribute("rel") ?? "").toLowerCase().split(/\s+/);
    const type = (link.getAttribute("type") ?? "").split(";")[0].trim().toLowerCase();
    if (rel.includes("alternate") && FEED_TYPES.includes(type)) add(link.getAttribute("href"));
  }

  const children = (parent: Element, name: string): Element[] => Array.from(parent.children).filter((child) => child.localName === name);
  const readXmlFeed = (root: Element): void => {
    if (root.localName === "feed") {
      for (const entry of Array.from(root.getElementsByTagNameNS("*", "entry"))) {
        // An Atom link without rel is the entry's alternate, the page it stands for.
        for (const link of children(entry, "link")) if ((link.getAttribute("rel") ?? "alternate") === "alternate") add(link.getAttribute("href"));
      }
    } else if (root.localName === "rss" || root.localName === "RDF") {
      for (const item of Array.from(root.getElementsByTagNameNS("*", "item"))) {
        const links = children(item, "link").filter((link) => link.namespaceURI !== ATOM);
        links.forEach((link) => add(link.textContent));
        // No <link>: a guid is the item's permalink unless it says it is not.
        const guid = children(item, "guid")[0];
        if (!links.length && guid && guid.getAttribute("isPermaLink") !== "false" && /^https?:/i.test(guid.textContent?.trim() ?? "")) add(guid.textContent);
      }
    }
  };

  const viewerSource = document.getElementById("webkit-xml-viewer-source-xml")?.firstElementChild;
  if (viewerSource) readXmlFeed(viewerSource);
  else if (document.documentElement && !(document.documentElement instanceof HTMLElement)) readXmlFeed(document.documentElement);
  else {
    // A document Chromium shows as text: one <pre> holding the body.
    const pre = document.body?.firstElementChild;
    const text = pre?.localName === "pre" ? pre.textContent ?? "" : "";
    if (document.contentType === "text/plain" && text.trimStart().startsWith("<")) {
      const parsed = new DOMParser().parseFromString(text, "application/xml");
      if (!parsed.getElementsByTagName("parsererror").length) readXmlFeed(parsed.documentElement);
    } else if (/[/+]json$/.test(document.contentType) && text) {
      try {
        const feed: unknown = JSON.parse(text);
        if (typeof feed === "object" && feed !== null && "version" in feed && "items" in feed && String(feed.version).startsWith("https://jsonfeed.org/version/") && Array.isArray(feed.items)) {
          for (const item of feed.items as unknown[]) {
            if (typeof item === "object" && item !== null && "url" in item && typeof item.url === "string") add(item.url);
          }
        }
      } catch {
        // not JSON: not a feed
      }
    }
  }
  return [...found];
}
