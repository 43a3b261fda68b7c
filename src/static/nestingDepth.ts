// How deep a document's elements nest, estimated by a scan of its tags (no tree is built): parse5's tree construction
// slows down sharply on deep nesting, so a document too deep is told before it is parsed.

/** Chromium's limit on the depth of the tree its HTML parser builds. */
export const BROWSER_MAX_DEPTH = 512;

/** Elements that never have content. */
const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr", "basefont", "bgsound", "frame", "keygen"]);
/** Elements whose content is text up to their end tag. */
const RAW_TEXT = new Set(["script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"]);
/** An element that a start tag of the same group ends when it is the open one (`<li>` after `<li>`, `<td>` after `<th>`...). */
const CLOSED_BY: Record<string, readonly string[]> = {
  li: ["li"],
  p: ["p"],
  dt: ["dt", "dd"],
  dd: ["dt", "dd"],
  option: ["option"],
  optgroup: ["optgroup"],
  tr: ["tr"],
  td: ["td", "th"],
  th: ["td", "th"],
  thead: ["tbody", "tfoot"],
  tbody: ["tbody", "tfoot"],
  rt: ["rt", "rp"],
  rp: ["rt", "rp"],
};

/** A block that ends an open <p> (the HTML standard's "close a p element"): the commonest ones. */
const CLOSES_P = new Set(["address", "article", "aside", "blockquote", "div", "dl", "fieldset", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "main", "nav", "ol", "p", "pre", "section", "table", "ul"]);

const TAG = /<(\/?)([A-Za-z][^\t\n\f\r />]*)([^>]*)>|<!--[\s\S]*?(?:-->|$)|<![^>]*>|<\?[^>]*>/.source;

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
    const top = open.at(-1);
    if (top !== undefined && CLOSED_BY[top]?.includes(name)) open.pop();
    else if (CLOSES_P.has(name) && open.includes("p")) open.length = open.lastIndexOf("p");
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
