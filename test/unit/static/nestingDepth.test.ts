import { describe, expect, it } from "vitest";
import { parseDocument } from "../../../src/static/documentReferences.js";
import { nestsDeeperThan } from "../../../src/static/nestingDepth.js";

/** The depth of the tree parse5 builds (elements only), to check the scan against. */
function parsedDepth(html: string): number {
  let deepest = 0;
  const stack: { node: ReturnType<typeof parseDocument>["childNodes"][number]; depth: number }[] = parseDocument(html).childNodes.map((node) => ({ node, depth: 1 }));
  while (stack.length) {
    const { node, depth } = stack.pop()!;
    if (!("tagName" in node)) continue;
    deepest = Math.max(deepest, depth);
    for (const child of node.childNodes) stack.push({ node: child, depth: depth + 1 });
  }
  return deepest;
}

describe("nestsDeeperThan", () => {
  it("reads nesting as the tree construction builds it: implied end tags, void elements, raw text, comments", () => {
    const pages = [
      `<ul>${"<li>item <a href=x>link".repeat(2000)}</ul>`,
      `<body>${"<p>para <b>bold</b>".repeat(2000)}`,
      `<table>${"<tr><td>a<td>b<th>c".repeat(2000)}</table>`,
      `<dl>${"<dt>t<dd>d".repeat(2000)}</dl><select>${"<option>o".repeat(2000)}</select>`,
      `${"<p>a<div>b</div>".repeat(2000)}`,
      `${"<img src=a.png><br><input>".repeat(2000)}<svg>${"<path d=x />".repeat(2000)}</svg>`,
      `<script>${"<div>".repeat(2000)}</script><style>${"<div>".repeat(2000)}</style><!-- ${"<div>".repeat(2000)} --><textarea>${"<div>".repeat(2000)}</textarea>`,
    ];
    for (const html of pages) {
      expect(parsedDepth(html)).toBeLessThan(20);
      expect(nestsDeeperThan(html, 20), html.slice(0, 40)).toBe(false);
    }
  });

  it("tells a document deeper than the limit", () => {
    expect(nestsDeeperThan(`<body>${"<div>".repeat(600)}x${"</div>".repeat(600)}`)).toBe(true);
    expect(nestsDeeperThan(`<body>${"<div>".repeat(500)}x${"</div>".repeat(500)}`)).toBe(false);
    // Unclosed inline elements nest too.
    expect(nestsDeeperThan(`<body>${"<span><b>".repeat(300)}`)).toBe(true);
    // Closed ones do not add up.
    expect(nestsDeeperThan(`<body>${"<div><span>x</span></div>".repeat(5000)}`)).toBe(false);
  });

  it("scans markup that never closes its tags in one pass", () => {
    expect(nestsDeeperThan("<a".repeat(1_000_000))).toBe(false);
    expect(nestsDeeperThan("<!x".repeat(1_000_000))).toBe(false);
    expect(nestsDeeperThan(`${"<b x='".repeat(300_000)}`)).toBe(false);
  });
});
