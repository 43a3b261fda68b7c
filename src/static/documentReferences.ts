// What an HTML document names, read with a real HTML parser (parse5, the standard's tree construction): what a
// browser fetches to render it and the links a browser crawl would queue from it.

import { defaultTreeAdapter, parse, type DefaultTreeAdapterMap, type TreeAdapter } from "parse5";
import { cssReferences } from "./cssReferences.js";
import { requisiteUrl, srcsetCandidates } from "./urlValues.js";

type Element = DefaultTreeAdapterMap["element"];
type ParentNode = DefaultTreeAdapterMap["parentNode"];

/** A document parse5 has parsed: the readers here take it instead of the HTML, so a document is parsed once. */
export type ParsedDocument = DefaultTreeAdapterMap["document"];

/** Elements whose text a reader of a capture's parse needs: the title, and the stylesheet a `<style>` holds. */
const TEXT_KEPT = new Set(["title", "style"]);

const isTextNode = (node: DefaultTreeAdapterMap["childNode"] | undefined): boolean => node?.nodeName === "#text";

/**
 * parse5's tree with the text of other elements left out, which is much of a parsed page's heap: each run of text is
 * a node holding its first character only, so an element with text is still no match for `:empty`, as in the
 * browser. The tree construction does not read text back.
 */
const withoutMostText: TreeAdapter<DefaultTreeAdapterMap> = {
  ...defaultTreeAdapter,
  insertText(parent, text) {
    if (TEXT_KEPT.has(parent.nodeName)) return defaultTreeAdapter.insertText(parent, text);
    if (!isTextNode(parent.childNodes.at(-1))) defaultTreeAdapter.appendChild(parent, defaultTreeAdapter.createTextNode(text.slice(0, 1)));
  },
  insertTextBefore(parent, text, reference) {
    if (TEXT_KEPT.has(parent.nodeName)) return defaultTreeAdapter.insertTextBefore(parent, text, reference);
    if (!isTextNode(parent.childNodes[parent.childNodes.indexOf(reference) - 1])) defaultTreeAdapter.insertBefore(parent, defaultTreeAdapter.createTextNode(text.slice(0, 1)), reference);
  },
};

/**
 * The HTML parsed as a browser's parser would (parse5, scripting on: noscript's content is text). `text: false`
 * keeps the text of the title and of `<style>` only: enough for the references, the template key, the title and
 * the selector check, not for `documentText`.
 */
export function parseDocument(html: string, { text = true }: { text?: boolean } = {}): ParsedDocument {
  return text ? parse(html) : parse(html, { treeAdapter: withoutMostText });
}

export type RequisiteKind = "image" | "stylesheet" | "script" | "icon" | "manifest" | "preload" | "media" | "frame" | "font" | "other";

/** One URL the document makes a browser fetch. */
export interface Requisite {
  /** Absolute, fragment removed. */
  url: string;
  kind: RequisiteKind;
  /** Where in the document, e.g. "img srcset", "link stylesheet", "style @import". */
  from: string;
  /** Fetched in cors mode: a module script, a modulepreload, an element with a crossorigin attribute. */
  cors?: true;
}

export interface DocumentReferences {
  /** What a browser fetches to render the document, each URL once (its first mention), in document order. */
  requisites: Requisite[];
  /** a hrefs, then area hrefs, then a meta refresh's target: absolute against the base URL, fragments kept, as page/linkExtract.ts reads them. */
  links: string[];
  /** The first <base href>, resolved against the document's URL; else the document's URL. */
  baseUrl: string;
}

const HTML_NS = "http://www.w3.org/1999/xhtml";
const SVG_NS = "http://www.w3.org/2000/svg";
const XLINK_NS = "http://www.w3.org/1999/xlink";

/** The script types a browser runs (and so fetches): the JavaScript MIME types and "module". */
const SCRIPT_TYPES = new Set([
  "",
  "module",
  "application/ecmascript",
  "application/javascript",
  "application/x-ecmascript",
  "application/x-javascript",
  "text/ecmascript",
  "text/javascript",
  "text/javascript1.0",
  "text/javascript1.1",
  "text/javascript1.2",
  "text/javascript1.3",
  "text/javascript1.4",
  "text/javascript1.5",
  "text/jscript",
  "text/livescript",
  "text/x-ecmascript",
  "text/x-javascript",
]);

const ICON_RELS = ["icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"];

export function isElement(node: DefaultTreeAdapterMap["node"]): node is Element {
  return "tagName" in node;
}

/** An attribute without a namespace (an HTML attribute, or an SVG element's own), or undefined. */
function attribute(element: Element, name: string): string | undefined {
  return element.attrs.find((attr) => attr.name === name && !attr.namespace)?.value;
}

function xlinkHref(element: Element): string | undefined {
  return element.attrs.find((attr) => attr.name === "href" && attr.namespace === XLINK_NS)?.value;
}

/**
 * Every element in tree order (a <template>'s content is not rendered, so not walked; noscript is text). A stack,
 * not recursion: a hostile page's nesting is as deep as it likes.
 */
function elements(root: ParentNode): Element[] {
  const found: Element[] = [];
  const stack: ParentNode[] = [root];
  while (stack.length) {
    const node = stack.pop()!;
    if (isElement(node)) found.push(node);
    for (let i = node.childNodes.length - 1; i >= 0; i--) {
      const child = node.childNodes[i]!;
      if (isElement(child)) stack.push(child);
    }
  }
  return found;
}

function textOf(element: Element): string {
  return element.childNodes.map((child) => ("value" in child && child.nodeName === "#text" ? child.value : "")).join("");
}

/** The first <base href>, resolved against the document's URL (the standard's frozen base URL). */
function baseUrlOf(all: Element[], documentUrl: string): string {
  const base = all.find((element) => element.tagName === "base" && element.namespaceURI === HTML_NS && attribute(element, "href") !== undefined);
  if (base === undefined) return documentUrl;
  try {
    return new URL(attribute(base, "href")!.trim(), documentUrl).href;
  } catch {
    return documentUrl;
  }
}

/** A meta refresh's target: `content="5; url=next.html"` (quotes around the URL allowed), or null. */
function refreshTarget(content: string): string | null {
  const match = /^\s*\d*(?:\.[\d.]*)?\s*[;,]?\s*(?:url\s*=\s*)?(.*)$/is.exec(content);
  let target = match?.[1]?.trim() ?? "";
  if (/^["']/.test(target)) target = target.slice(1, target.indexOf(target[0]!, 1) < 0 ? undefined : target.indexOf(target[0]!, 1));
  return target || null;
}

/** Elements whose attribute names one URL (or a srcset's candidates) the browser fetches, as it always does. */
const URL_ATTRIBUTES: readonly { tags: readonly string[]; attribute: string; kind: RequisiteKind; srcset?: true }[] = [
  { tags: ["img"], attribute: "src", kind: "image" },
  { tags: ["img"], attribute: "srcset", kind: "image", srcset: true },
  { tags: ["video"], attribute: "src", kind: "media" },
  { tags: ["video"], attribute: "poster", kind: "image" },
  { tags: ["audio", "track"], attribute: "src", kind: "media" },
  { tags: ["iframe", "frame"], attribute: "src", kind: "frame" },
  { tags: ["embed"], attribute: "src", kind: "other" },
  { tags: ["object"], attribute: "data", kind: "other" },
  // The old presentational attribute, still fetched.
  { tags: ["body", "table", "td", "th"], attribute: "background", kind: "image" },
];

/**
 * What `html`, served from `documentUrl`, names: the requisites a browser fetches to render it (each once, its
 * first mention kept), the links a browser crawl would queue, and its base URL. Stylesheets' own contents are
 * not fetched here: a <link rel=stylesheet>'s url() values come from cssReferences() once it is fetched.
 */
export function documentReferences(html: string | ParsedDocument, documentUrl: string): DocumentReferences {
  const all = elements(typeof html === "string" ? parse(html) : html);
  const baseUrl = baseUrlOf(all, documentUrl);
  const requisites = new Map<string, Requisite>();
  // As page/linkExtract.ts queues them: every a[href] (SVG's too), then every area[href]; then a meta refresh's target.
  const links = { a: [] as string[], area: [] as string[], refresh: [] as string[] };

  // Whether the element being read fetches in cors mode.
  let cors = false;
  const add = (value: string | undefined, kind: RequisiteKind, from: string, against = baseUrl) => {
    if (value === undefined) return;
    const url = requisiteUrl(value, against);
    if (url !== null && !requisites.has(url)) requisites.set(url, { url, kind, from, ...(cors ? { cors: true as const } : {}) });
  };
  const addSrcset = (value: string | undefined, kind: RequisiteKind, from: string) => {
    for (const candidate of srcsetCandidates(value ?? "")) add(candidate, kind, from);
  };
  const addCss = (css: string, from: string) => {
    const found = cssReferences(css, baseUrl);
    for (const url of found.imports) add(url, "stylesheet", `${from} @import`);
    const fonts = new Set(found.fonts);
    // A stylesheet's other url() values are almost all images (backgrounds, list markers, cursors).
    for (const url of found.urls) add(url, fonts.has(url) ? "font" : "image", `${from} url()`);
  };
  const addLink = (value: string | undefined, into: string[]) => {
    if (value === undefined || !value.trim()) return;
    try {
      into.push(new URL(value.trim(), baseUrl).href);
    } catch {
      // not a URL: no link
    }
  };

  for (const element of all) {
    cors = false;
    const style = attribute(element, "style");
    if (style !== undefined) addCss(style, "style attribute");
    if (element.namespaceURI === SVG_NS) {
      // SVG 2: href wins over xlink:href.
      const href = attribute(element, "href") ?? xlinkHref(element);
      if (element.tagName === "image") add(href, "image", "svg image href");
      // A <use> of a fragment of this document fetches nothing.
      else if (element.tagName === "use" && href !== undefined && !href.trim().startsWith("#")) add(href, "image", "svg use href");
      else if (element.tagName === "a") addLink(attribute(element, "href"), links.a);
      // An inline SVG's <style> is one of the document's stylesheets, as an HTML one is.
      else if (element.tagName === "style") addCss(textOf(element), "svg style");
      continue;
    }
    if (element.namespaceURI !== HTML_NS) continue;
    const tag = element.tagName;
    const rel = tag === "link" ? ` ${(attribute(element, "rel") ?? "").toLowerCase()} ` : "";
    cors = attribute(element, "crossorigin") !== undefined || (tag === "script" && attribute(element, "type")?.trim().toLowerCase() === "module") || /[\t\n\f\r ]modulepreload[\t\n\f\r ]/.test(rel);
    const parentTag = element.parentNode !== null && isElement(element.parentNode) ? element.parentNode.tagName : "";
    for (const named of URL_ATTRIBUTES.filter((entry) => entry.tags.includes(tag))) {
      const value = attribute(element, named.attribute);
      if (named.srcset) addSrcset(value, named.kind, `${tag} ${named.attribute}`);
      else add(value, named.kind, `${tag} ${named.attribute}`);
    }
    switch (tag) {
      case "source":
        if (parentTag === "picture") addSrcset(attribute(element, "srcset"), "image", "picture source srcset");
        else add(attribute(element, "src"), "media", `${parentTag || "source"} source src`);
        break;
      case "input":
        if (attribute(element, "type")?.trim().toLowerCase() === "image") add(attribute(element, "src"), "image", "input image src");
        break;
      case "script": {
        const type = (attribute(element, "type") ?? "").trim().toLowerCase();
        if (SCRIPT_TYPES.has(type)) add(attribute(element, "src"), "script", "script src");
        break;
      }
      case "style":
        addCss(textOf(element), "style");
        break;
      case "link":
        addLinkElement(element, add, addSrcset);
        break;
      case "a":
      case "area":
        addLink(attribute(element, "href"), links[tag]);
        break;
      case "meta":
        if (attribute(element, "http-equiv")?.trim().toLowerCase() === "refresh") {
          const target = refreshTarget(attribute(element, "content") ?? "");
          if (target !== null) addLink(target, links.refresh);
        }
        break;
      default:
        break;
    }
  }
  return { requisites: [...requisites.values()], links: [...links.a, ...links.area, ...links.refresh], baseUrl };
}

type Add = (value: string | undefined, kind: RequisiteKind, from: string) => void;

/** A <link>'s fetch, by its rel keywords: stylesheets, icons, the manifest, preloads and prefetches. */
function addLinkElement(element: Element, add: Add, addSrcset: Add): void {
  const rels = (attribute(element, "rel") ?? "").toLowerCase().split(/[\t\n\f\r ]+/).filter(Boolean);
  const href = attribute(element, "href");
  if (rels.includes("stylesheet")) add(href, "stylesheet", "link stylesheet");
  else if (rels.some((rel) => ICON_RELS.includes(rel))) add(href, "icon", `link ${rels.join(" ")}`);
  else if (rels.includes("manifest")) add(href, "manifest", "link manifest");
  else if (rels.includes("preload")) {
    const as = (attribute(element, "as") ?? "").trim().toLowerCase();
    add(href, "preload", `link preload as=${as}`);
    if (as === "image") addSrcset(attribute(element, "imagesrcset"), "preload", "link preload imagesrcset");
  } else if (rels.includes("modulepreload")) add(href, "preload", "link modulepreload");
  else if (rels.includes("prefetch")) add(href, "other", "link prefetch");
}
