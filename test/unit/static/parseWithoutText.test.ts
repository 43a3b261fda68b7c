// A capture's parse keeps only the text its readers need (parseDocument with text: false): what a document names, its
// template, its title and which selectors it holds must read the same as from the whole tree, on tricky markup and on
// the real pages of the archives under fixtures/real-web.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { WARCParser } from "warcio";
import { describe, expect, it } from "vitest";
import { documentReferences, parseDocument, type ParsedDocument } from "../../../src/static/documentReferences.js";
import { documentTitle } from "../../../src/static/documentText.js";
import { documentSelectors } from "../../../src/static/selectorMatch.js";
import { templateKey } from "../../../src/static/templateKey.js";
import { EVERY_KIND_HTML, EVERY_KIND_PATH } from "./everyKindPage.js";

const REAL_WEB = join(import.meta.dirname, "../../../fixtures/real-web");

// Text where the tree construction moves it (foster parenting out of a table, the adoption agency's misnested
// formatting), a <pre>'s leading newline, entities in the title, a style in the body and in SVG, noscript and
// template content, empty and non-empty elements for :empty.
const TRICKY = `<!doctype html><html><head><title> Caf&eacute; &amp;
 tables </title><style>body { background: url(/img/bg.png) }</style></head><body>
<table>text fostered <tr><td>cell</td>after cell</tr> more</table>
<p><b>bold <i>both</b> italic</i> plain</p>
<pre>
first line</pre>
<div class="empty"></div><div class="spaced"> </div><div class="full">x</div><div class="nested"><span></span></div>
<svg><style>.a { fill: url(/img/pattern.svg#p) }</style><title>svg title</title></svg>
<noscript><img src="/img/noscript.png"></noscript>
<template><img src="/img/template.png"></template>
<section><h2>Head</h2><p>one</p><p>two</p></section>
<a href="/next.html">next</a> <img src="/img/last.png" srcset="/img/last-2x.png 2x">
</body></html>`;

const SELECTORS = [
  ".empty:empty", ".spaced:empty", ".full:empty", ".nested:empty", "div:not(:empty)", "span:empty", "p:first-child", "p:last-child",
  "section > p:nth-child(2)", "b i", "table td", "pre", "svg title", "img[srcset]", ":root > body > a", "h2 + p", "h2 ~ p", "td:only-child",
];

/** What a static capture reads of a parse. */
function readings(tree: ParsedDocument, url: string, selectors: string[]) {
  const references = documentReferences(tree, url);
  return { references, template: templateKey(tree, url, references), title: documentTitle(tree), held: documentSelectors(tree)(selectors) };
}

/** The document's own classes and ids as selectors, each also with :empty and :not(:empty). */
function selectorsOf(tree: ParsedDocument): string[] {
  const names = new Set<string>();
  const stack: unknown[] = [tree];
  while (stack.length && names.size < 120) {
    const node = stack.pop() as { attrs?: { name: string; value: string }[]; childNodes?: unknown[] };
    for (const attr of node.attrs ?? []) {
      if (attr.name === "class") for (const name of attr.value.split(/\s+/).filter((n) => /^[A-Za-z][\w-]*$/.test(n))) names.add(`.${name}`);
      if (attr.name === "id" && /^[A-Za-z][\w-]*$/.test(attr.value)) names.add(`#${attr.value}`);
    }
    stack.push(...(node.childNodes ?? []));
  }
  return [...names].flatMap((s) => [s, `${s}:empty`, `${s}:not(:empty)`, `${s} > *:first-child`]).concat(SELECTORS);
}

async function htmlResponses(file: string): Promise<{ url: string; html: string }[]> {
  const found: { url: string; html: string }[] = [];
  for await (const record of new WARCParser([readFileSync(join(REAL_WEB, file))])) {
    if (record.warcType !== "response") continue;
    const type = record.httpHeaders?.headers.get("content-type") ?? "";
    const status = Number(record.httpHeaders?.statusCode ?? 0);
    const body = Buffer.from(await record.readFully(true));
    if (status === 200 && type.includes("text/html")) found.push({ url: record.warcTargetURI ?? "", html: new TextDecoder().decode(body) });
  }
  return found;
}

const REAL_PAGES = ["http://books.toscrape.com/", "http://en.wikipedia.org/wiki/Mona_Lisa", "http://en.wikipedia.org/wiki/Mona_Lisa"];
const FIXTURES = join(import.meta.dirname, "../../../fixtures");

describe("parseDocument without most text", () => {
  it("reads what the whole tree reads on tricky markup: requisites, links, template, title, selectors held (:empty included)", () => {
    for (const [url, html] of [["http://127.0.0.1:8080/tricky.html", TRICKY], [`http://127.0.0.1:8080${EVERY_KIND_PATH}`, EVERY_KIND_HTML]] as const) {
      const whole = parseDocument(html);
      expect(readings(parseDocument(html, { text: false }), url, selectorsOf(whole))).toEqual(readings(whole, url, selectorsOf(whole)));
    }
    const lean = readings(parseDocument(TRICKY, { text: false }), "http://127.0.0.1:8080/tricky.html", SELECTORS);
    expect(lean.title).toBe("Café & tables");
    expect(lean.held).toContain(".empty:empty");
    expect(lean.held).not.toContain(".spaced:empty");
    expect(lean.held).not.toContain(".full:empty");
    expect(lean.references.requisites.map((r) => r.url)).toEqual(["http://127.0.0.1:8080/img/bg.png", "http://127.0.0.1:8080/img/pattern.svg", "http://127.0.0.1:8080/img/last.png", "http://127.0.0.1:8080/img/last-2x.png"]);
  });

  it("reads what the whole tree reads on every HTML page of the real-web archives and of the fixtures", async () => {
    const real = [...(await htmlResponses("books.toscrape.com.warc")), ...(await htmlResponses("en.wikipedia.org-Mona_Lisa-2013.warc.gz"))];
    expect(real.map((p) => p.url).sort()).toEqual(REAL_PAGES);
    const fixtures = readdirSync(FIXTURES, { recursive: true }).map(String).filter((f) => f.endsWith(".html"));
    expect(fixtures.length).toBeGreaterThan(20);
    const pages = [...real, ...fixtures.map((f) => ({ url: `http://127.0.0.1:8080/${f}`, html: readFileSync(join(FIXTURES, f), "utf8") }))];
    for (const { url, html } of pages) {
      const whole = parseDocument(html);
      const selectors = selectorsOf(whole);
      expect(readings(parseDocument(html, { text: false }), url, selectors), url).toEqual(readings(whole, url, selectors));
    }
  });
});
