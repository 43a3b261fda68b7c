import { describe, expect, it } from "vitest";
import { parseDocument } from "../../../src/static/documentReferences.js";
import { documentText, documentTitle } from "../../../src/static/documentText.js";

describe("documentTitle and documentText", () => {
  it("read the title as document.title and the text as the browser path extracts it", () => {
    const doc = parseDocument(`<!doctype html><html><head><title>
      A   title
    </title><style>p{}</style><script>var a = "<p>x</p>";</script></head>
    <body><header>Site</header><h1> Heading </h1><p>One <em>two</em> three</p>
    <template><p>not rendered</p></template><noscript><p>no script</p></noscript>
    <svg><title>svg title</title><text>drawn</text></svg><footer>Foot</footer><div><header><p>in a header's p</p></header></div></body></html>`);
    expect(documentTitle(doc)).toBe("A title");
    // Parents skipped are only the text's own parent, as page/pageText.ts does; template content is not in the tree.
    expect(documentText(doc)).toBe("Heading\nOne\ntwo\nthree\nsvg title\ndrawn\nin a header's p");
  });

  it("gives an empty title without a <title>", () => {
    expect(documentTitle(parseDocument("<p>text</p>"))).toBe("");
  });
});
