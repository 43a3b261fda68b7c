// Which pages share a template: the rule hybrid capture groups pages by.

import { createHash } from "node:crypto";
import { parse, type DefaultTreeAdapterMap } from "parse5";
import { documentReferences, type ParsedDocument } from "./documentReferences.js";

type Element = DefaultTreeAdapterMap["element"];

/** A page's template and what it was made of, so two pages' differing keys can be explained. */
export interface TemplateKey {
  /** sha256 hex of the parts below, first 16 characters. */
  key: string;
  /** Same-site scripts the document names as scriptIdentity gives them (cache-busting parameters dropped; the page's own folder's by name), sorted, each once. */
  scripts: string[];
  /** Same-site stylesheet URLs (link rel=stylesheet, <style> @import), likewise. */
  stylesheets: string[];
  /** The elements of the first three levels below <body>, as tag paths (`main>ul.nav>li`), each once, in document order; phrasing content (links, images, spans...) left out. */
  skeleton: string[];
}

/** Query parameters that only bust caches (a version or a time): pages naming `app.js?ver=2` and `app.js?ver=3` share a template. */
const CACHE_BUSTERS = new Set(["v", "ver", "version", "_", "t", "ts", "timestamp", "cb", "cachebust", "cachebuster", "rev", "build"]);

const SKELETON_DEPTH = 3;
/**
 * Phrasing content, left out of the skeleton with what it holds: a link, an image or a span that one page of a
 * template has and the next lacks (a first chapter's missing "previous" link) is content, not layout. Media, frames
 * and scripts stay: they change what a page loads.
 */
const PHRASING = new Set([
  "a", "abbr", "b", "bdi", "bdo", "br", "button", "cite", "code", "data", "dfn", "em", "i", "img", "input", "kbd", "label", "mark",
  "meter", "output", "picture", "progress", "q", "ruby", "s", "samp", "select", "small", "span", "strong", "sub", "sup", "textarea",
  "time", "u", "var", "wbr",
]);

/**
 * The site a host belongs to, without a public suffix list: an IP address or a one-label host is its own site;
 * otherwise its last two labels, or three under a country code's second level (`example.co.uk`, `example.com.au`).
 */
export function siteOf(hostname: string): string {
  if (/^\d+(\.\d+){3}$/.test(hostname) || hostname.startsWith("[")) return hostname;
  const labels = hostname.split(".");
  const underCountrySecondLevel = labels.length >= 3 && labels.at(-1)!.length === 2 && labels.at(-2)!.length <= 3;
  return labels.slice(underCountrySecondLevel ? -3 : -2).join(".");
}

/** The URL with its cache-busting query parameters dropped and the rest sorted: how a script is named when templates are compared. */
export function withoutCacheBusters(href: string): string {
  const url = new URL(href);
  const kept = [...url.searchParams].filter(([name]) => !CACHE_BUSTERS.has(name.toLowerCase())).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  url.search = new URLSearchParams(kept).toString();
  return url.href;
}

/**
 * A script as templates compare them: its URL without cache-busting parameters; one in the page's own folder by its
 * name alone (`./sidebar-items.js`), so that a site writing a script of the same name into every folder (a section's
 * data: rustdoc's sidebar items, a per-language strings file) has one template across its folders. What such a script
 * makes a page fetch or link is learned and verified as any other script's.
 */
export function scriptIdentity(scriptUrl: string, pageUrl: string): string {
  const script = new URL(withoutCacheBusters(scriptUrl));
  const page = new URL(pageUrl);
  const folder = (path: string) => path.slice(0, path.lastIndexOf("/") + 1);
  if (script.origin === page.origin && folder(script.pathname) === folder(page.pathname)) return `./${script.pathname.slice(folder(script.pathname).length)}${script.search}`;
  return script.href;
}

/** An element as a skeleton step: tag, #id, .classes sorted; digit runs of ids and classes become 0, so `post-123` and `post-124` are one step. */
function step(element: Element): string {
  const attr = (name: string) => element.attrs.find((a) => a.name === name && !a.namespace)?.value ?? "";
  const id = attr("id").trim();
  const classes = [...new Set(attr("class").split(/[\t\n\f\r ]+/).filter(Boolean))].sort();
  const names = ((id ? `#${id}` : "") + classes.map((c) => `.${c}`).join("")).replace(/\d+/g, "0");
  return element.tagName + names;
}

function skeletonOf(tree: ParsedDocument): string[] {
  const htmlElement = tree.childNodes.find((node): node is Element => "tagName" in node && node.tagName === "html");
  const body = htmlElement?.childNodes.find((node): node is Element => "tagName" in node && node.tagName === "body");
  const paths = new Set<string>();
  const walk = (element: Element, path: string, depth: number) => {
    if (depth > SKELETON_DEPTH) return;
    for (const child of element.childNodes) {
      if (!("tagName" in child) || PHRASING.has(child.tagName)) continue;
      const childPath = path ? `${path}>${step(child)}` : step(child);
      paths.add(childPath);
      walk(child, childPath, depth + 1);
    }
  };
  if (body !== undefined) walk(body, "", 1);
  return [...paths];
}

/**
 * The template a page belongs to. Two pages share a template when their documents name the same same-site scripts
 * and stylesheets (by URL, cache-busting query parameters such as ?v=, ?ver=, ?_=, ?t= dropped: a new release
 * of a page's script is the same template; a script in the page's own folder by its name: scriptIdentity) and have the same skeleton: the elements of the first three levels
 * below <body> by tag name, id and classes (digits ignored), text and phrasing content (links, images, spans...) not
 * counted, each path once (so a list's length, or a "previous" link the first page lacks, does not matter). Third-party scripts and stylesheets (ads, analytics, widgets) do not count: they change
 * between loads of one page. `html` may be the document parsed already, and `references` what it names, read
 * already (documentReferences of the same document): each is then not read again.
 */
export function templateKey(html: string | ParsedDocument, documentUrl: string, references = documentReferences(html, documentUrl)): TemplateKey {
  const site = siteOf(new URL(documentUrl).hostname);
  const { requisites } = references;
  const sameSite = (kind: "script" | "stylesheet") => requisites.filter((r) => r.kind === kind && siteOf(new URL(r.url).hostname) === site);
  const scripts = [...new Set(sameSite("script").map((r) => scriptIdentity(r.url, documentUrl)))].sort();
  const stylesheets = [...new Set(sameSite("stylesheet").map((r) => withoutCacheBusters(r.url)))].sort();
  const skeleton = skeletonOf(typeof html === "string" ? parse(html) : html);
  const key = createHash("sha256").update(JSON.stringify({ scripts, stylesheets, skeleton })).digest("hex").slice(0, 16);
  return { key, scripts, stylesheets, skeleton };
}
