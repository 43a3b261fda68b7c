// How deep a document's elements nest, estimated by a scan of its tags (no tree is built): parse5's tree construction
// slows down sharply on deep nesting, so a document too deep is told before it is parsed.

/** Chromium's limit on the depth of the tree its HTML parser builds. */
export const BROWSER_MAX_DEPTH = 512;

/** Elements that never have content. */
const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr", "basefont", "bgsound", "frame", "keygen"]);
/** Elements whose content is text up to their end tag. */
const RAW_TEXT = new Set(["script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"]);
/**
 * The start tags that end an open element before they open (the tree construction's implied end tags): the open
 * element nearest the top that is one of `ends`, when none of `within` is above it, is closed with everything above it.
 */
const CLOSES: Record<string, { ends: ReadonlySet<string>; within: ReadonlySet<string> }> = {};
function closes(tags: readonly string[], ends: readonly string[], within: readonly string[]): void {
  for (const tag of tags) CLOSES[tag] = { ends: new Set(ends), within: new Set(within) };
}
closes(["li"], ["li"], ["ul", "ol", "menu", "table", "td", "th", "body", "html"]);
closes(["dt", "dd"], ["dt", "dd"], ["dl", "table", "td", "th", "body", "html"]);
closes(["option"], ["option"], ["select", "datalist", "optgroup", "body", "html"]);
closes(["optgroup"], ["optgroup", "option"], ["select", "body", "html"]);
closes(["tr"], ["tr"], ["table", "tbody", "thead", "tfoot", "html"]);
closes(["td", "th"], ["td", "th"], ["tr", "table", "html"]);
closes(["tbody", "thead", "tfoot"], ["tbody", "thead", "tfoot"], ["table", "html"]);
closes(["rt", "rp"], ["rt", "rp"], ["ruby", "body", "html"]);
closes(["a"], ["a"], ["table", "td", "th", "body", "html"]);
// A block ends an open <p> (in button scope).
closes(
  ["address", "article", "aside", "blockquote", "details", "div", "dl", "fieldset", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "main", "nav", "ol", "p", "pre", "section", "table", "ul"],
  ["p"],
  ["button", "table", "td", "th", "body", "html"],
);

/** The index of the open element `tag` ends (see CLOSES), or -1. */
function endedBy(open: readonly string[], tag: string): number {
  const rule = CLOSES[tag];
  if (rule === undefined) return -1;
  for (let i = open.length - 1; i >= 0; i--) {
    if (rule.ends.has(open[i]!)) return i;
    if (rule.within.has(open[i]!)) return -1;
  }
  return -1;
}

// No part runs past the next "<": a "<" that never closes costs one step, not a scan to the document's end.
const TAG = /<(\/?)([A-Za-z][^\t\n\f\r \/<>]*)([^<>]*)>|<!--[\s\S]*?(?:-->|$)|<![^<>]*>|<\?[^<>]*>/.source;

/**
 * Whether the elements of `html` nest deeper than `limit`, by a scan of its tags that mimics the tree construction's
 * commonest rules (void elements, `/>` as SVG and MathML read it, raw text, end tags closing up to their match,
 * implied end tags of li, p, td, option...). An estimate, for a cap far above real pages' depth: misnested markup
 * may read deeper or shallower than the tree parse5 builds. Linear in the document's size (an end tag searches at
 * most `limit` open elements).
 */
export function nestsDeeperThan(html: string, limit = BROWSER_MAX_DEPTH): boolean {
  const open: string[] = [];
  const tags = new RegExp(TAG, "g");
  for (let match = tags.exec(html); match !== null; match = tags.exec(html)) {
    const [, slash, rawName, rest] = match;
    if (rawName === undefined) continue;
    const name = rawName.toLowerCase();
    if (slash) {
      const at = open.lastIndexOf(name);
      if (at >= 0) open.length = at;
      continue;
    }
    const ended = endedBy(open, name);
    if (ended >= 0) open.length = ended;
    if (VOID.has(name) || /\/\s*$/.test(rest ?? "")) continue;
    if (RAW_TEXT.has(name)) {
      if (name === "plaintext") break;
      // Its text runs to its end tag: skip it, tags in it are not tags.
      const endTag = new RegExp(`</${name}`, "gi");
      endTag.lastIndex = tags.lastIndex;
      const end = endTag.exec(html);
      if (end === null) break;
      tags.lastIndex = end.index;
      continue;
    }
    open.push(name);
    if (open.length > limit) return true;
  }
  return false;
}
