// Which CSS selectors a parsed document holds a match for: css-select over parse5's own tree (no second parse).

import { selectOne, type Options } from "css-select";
import { parse as parseSelector, type Selector } from "css-what";
import type { DefaultTreeAdapterMap } from "parse5";
import { parseDocument } from "./documentReferences.js";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];
type ParentNode = DefaultTreeAdapterMap["parentNode"];

const isElement = (node: Node): node is Element => "tagName" in node;
/** A <template>'s content is its own fragment (not among its childNodes), as in the browser: not searched. */
const childrenOf = (node: Node): Node[] => ("childNodes" in node ? (node as ParentNode).childNodes : []);
const parentOf = (node: Node): Node | null => ("parentNode" in node ? (node.parentNode as Node | null) : null);

function descendantText(node: Node): string {
  if (node.nodeName === "#text") return (node as DefaultTreeAdapterMap["textNode"]).value;
  return childrenOf(node).map(descendantText).join("");
}

/** The elements under `nodes` (themselves included) that pass `test`, in document order; the first only when `firstOnly`. */
function findAll(test: (element: Element) => boolean, nodes: Node[], firstOnly = false): Element[] {
  const found: Element[] = [];
  const stack = [...nodes].reverse();
  while (stack.length) {
    const node = stack.pop()!;
    if (isElement(node) && test(node)) {
      found.push(node);
      if (firstOnly) break;
    }
    const children = childrenOf(node);
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return found;
}

const adapter: NonNullable<Options<Node, Element>["adapter"]> = {
  isTag: isElement,
  existsOne: (test, nodes) => findAll(test, nodes, true).length > 0,
  getAttributeValue: (element, name) => element.attrs.find((a) => a.name === name && !a.namespace)?.value,
  getChildren: childrenOf,
  getName: (element) => element.tagName,
  getParent: (element) => {
    const parent = parentOf(element);
    return parent && isElement(parent) ? parent : null;
  },
  getSiblings: (node) => {
    const parent = parentOf(node);
    return parent ? childrenOf(parent) : [node];
  },
  getText: descendantText,
  hasAttrib: (element, name) => element.attrs.some((a) => a.name === name && !a.namespace),
  removeSubsets: (nodes) => nodes.filter((node, i) => {
    for (let up = parentOf(node); up; up = parentOf(up)) if (nodes.includes(up)) return false;
    return nodes.indexOf(node) === i;
  }),
  findAll,
  findOne: (test, nodes) => findAll(test, nodes, true)[0] ?? null,
};

/** The tags, ids, classes and attribute names a document's elements have: what a selector's subject needs, looked up. */
interface DocumentIndex {
  tags: Set<string>;
  ids: Set<string>;
  classes: Set<string>;
  attributes: Set<string>;
}

function indexOf(roots: Node[]): DocumentIndex {
  const index: DocumentIndex = { tags: new Set(), ids: new Set(), classes: new Set(), attributes: new Set() };
  findAll((element) => {
    index.tags.add(element.tagName);
    for (const attr of element.attrs) {
      if (attr.namespace) continue;
      index.attributes.add(attr.name);
      if (attr.name === "id") index.ids.add(attr.value);
      else if (attr.name === "class") for (const name of attr.value.split(/[\t\n\f\r ]+/)) if (name) index.classes.add(name);
    }
    return false;
  }, roots);
  return index;
}

const COMBINATORS = new Set(["child", "parent", "sibling", "adjacent", "descendant", "column-combinator"]);

/**
 * Whether a selector can match at all: the element it selects (its last compound) needs each tag, id, class and
 * attribute it names to be in the document. Most selectors a page's scripts look for in vain fail here, without
 * walking the tree once per selector.
 */
function mayMatch(groups: Selector[][], index: DocumentIndex): boolean {
  return groups.some((tokens) => {
    let start = tokens.length;
    while (start > 0 && !COMBINATORS.has(tokens[start - 1]!.type)) start--;
    return tokens.slice(start).every((token) => {
      if (token.type === "tag") return token.name === "*" || index.tags.has(token.name.toLowerCase());
      if (token.type !== "attribute") return true;
      if (token.name === "class" && token.action === "element") return index.classes.has(token.value);
      if (token.name === "id" && token.action === "equals") return index.ids.has(token.value);
      return index.attributes.has(token.name.toLowerCase());
    });
  });
}

/** Whether the index alone shows a match: a selector of one class or one id (`.playground`, `#sidebar`) that the document has. */
function matchShownByIndex(groups: Selector[][], index: DocumentIndex): boolean {
  return groups.some((tokens) => {
    if (tokens.length !== 1) return false;
    const token = tokens[0]!;
    if (token.type !== "attribute" || token.ignoreCase) return false;
    if (token.name === "class" && token.action === "element") return index.classes.has(token.value);
    return token.name === "id" && token.action === "equals" && index.ids.has(token.value);
  });
}

/**
 * Of `selectors`, those `html` holds a match for (`html` may be parse5's tree of it already). A selector css-select
 * cannot read (a pseudo-class only a live page has, a typo) counts as no match.
 */
export function selectorsHeld(html: string | DefaultTreeAdapterMap["document"], selectors: readonly string[]): string[] {
  return documentSelectors(typeof html === "string" ? parseDocument(html) : html)(selectors);
}

/** A parsed document's `selectorsHeld`, its index of tags, ids, classes and attributes read once, at the first call. */
export function documentSelectors(document: DefaultTreeAdapterMap["document"]): (selectors: readonly string[]) => string[] {
  const roots = childrenOf(document);
  let index: DocumentIndex | null = null;
  return (selectors) => {
    if (!selectors.length) return [];
    index ??= indexOf(roots);
    return matchingSelectors(selectors, roots, index);
  };
}

function matchingSelectors(selectors: readonly string[], roots: Node[], index: DocumentIndex): string[] {
  return selectors.filter((selector) => {
    try {
      const groups = parseSelector(selector);
      if (!mayMatch(groups, index)) return false;
      return matchShownByIndex(groups, index) || selectOne<Node, Element>(selector, roots, { adapter, xmlMode: false }) !== null;
    } catch {
      return false;
    }
  });
}
