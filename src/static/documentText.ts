// A document's title and text as the browser path reads them (page/linkExtract.ts's document.title, page/pageText.ts's
// text), read from the parse5 tree instead of a rendered page.

import type { DefaultTreeAdapterMap } from "parse5";
import { isElement, type ParsedDocument } from "./documentReferences.js";

type Node = DefaultTreeAdapterMap["node"];

const HTML_NS = "http://www.w3.org/1999/xhtml";

/** Elements whose own text is not page text: page/pageText.ts's SKIPPED_PARENTS (browsertrix-crawler's default extraction). */
const SKIPPED_PARENTS = new Set(["script", "style", "noscript", "title", "header", "footer", "banner-div"]);

/** Every node in tree order, by a stack (a hostile document nests as deep as it likes); a <template>'s content is not in the tree. */
function* nodes(root: ParsedDocument): Generator<Node> {
  const stack: Node[] = [...root.childNodes].reverse();
  while (stack.length) {
    const node = stack.pop()!;
    yield node;
    if ("childNodes" in node) for (let i = node.childNodes.length - 1; i >= 0; i--) stack.push(node.childNodes[i]!);
  }
}

/** HTML's "strip and collapse ASCII whitespace". */
function collapsed(text: string): string {
  return text.replace(/[\t\n\f\r ]+/g, " ").replace(/^ | $/g, "");
}

/** `document.title`: the first HTML <title>'s text, ASCII whitespace stripped and collapsed; "" without one. */
export function documentTitle(document: ParsedDocument): string {
  for (const node of nodes(document)) {
    if (isElement(node) && node.tagName === "title" && node.namespaceURI === HTML_NS) {
      return collapsed(node.childNodes.map((child) => (child.nodeName === "#text" && "value" in child ? child.value : "")).join(""));
    }
  }
  return "";
}

/**
 * The document's text as page/pageText.ts extracts it from a rendered page: every text node in tree order, trimmed,
 * empty ones left out, one per line, unless its parent element is script, style, noscript, title, header, footer or
 * banner-div (HTML elements: an SVG title is text). What scripts would add or change is not there: this is the document as served.
 */
export function documentText(document: ParsedDocument): string {
  const lines: string[] = [];
  for (const node of nodes(document)) {
    if (node.nodeName !== "#text" || !("value" in node)) continue;
    const parent = node.parentNode;
    // The browser path compares upper-case node names: an SVG <title> (nodeName "title") is text.
    if (parent === null || !isElement(parent) || (parent.namespaceURI === HTML_NS && SKIPPED_PARENTS.has(parent.tagName))) continue;
    const value = node.value.trim();
    if (value) lines.push(value);
  }
  return lines.join("\n");
}
