import { headerValue, mimeTypeOf, type Exchange } from "../archive/exchange.js";
import { discardBody, type FallbackFetcher } from "../fetch/fallbackFetcher.js";
import { errorMessage } from "../log/logger.js";
import type { ExchangeSink, StoreOutcome } from "../pipeline/exchangeSink.js";
import { pageLinkUrls, withoutHash } from "../scope/urls.js";
import { browserRequestHeaders, type BrowserIdentity } from "../static/browserRequestHeaders.js";
import { documentEncoding } from "../static/documentEncoding.js";
import { documentReferences, parseDocument, type DocumentReferences, type ParsedDocument } from "../static/documentReferences.js";
import { documentText, documentTitle } from "../static/documentText.js";
import { BROWSER_MAX_DEPTH, nestsDeeperThan } from "../static/nestingDepth.js";
import { templateKey, type TemplateKey } from "../static/templateKey.js";
import { documentSelectors } from "../static/selectorMatch.js";
import type { PageLoadResult } from "./pageLoadResult.js";
import { decodedBody, documentFetches, learnedFetches, RequisiteFetches, type CapturedSummary } from "./staticRequisites.js";

/** The largest document a static capture parses (decoded); a larger one goes to the browser. */
export const MAX_STATIC_DOCUMENT = 5 * 1024 * 1024;

export interface StaticPageOptions {
  /** The worker's: address policy, --header, blocking, proxies, --originOverride, and the body size cap and storage limits. */
  fetcher: FallbackFetcher;
  /** static/browserRequestHeaders.ts: the tabs' user agent and Accept-Language. */
  identity: BrowserIdentity;
  /** The Cookie header the browser would send to a URL (the profile's cookie jar), or null. */
  cookieHeader: (url: string) => Promise<string | null>;
  /** --rateLimitStatusCodes: a document with one of these is a rate-limit answer, left to the browser path. */
  rateLimitStatusCodes?: readonly number[];
  /** --text: documents are parsed with their text (otherwise the parse keeps only what the capture reads). */
  keepText?: boolean;
}

export interface StaticDocument {
  /** The page URL asked for (fragment removed). */
  url: string;
  /**
   * The document's exchange as fetched, not stored yet (resourceType "Document", pageDocument true; its request
   * headers what Chromium sends for a top-level navigation typed by the user, plus Cookie).
   */
  exchange: Exchange;
  /** Parsed when it is a 200 HTML document within the caps; else null, and `notStatic` says why the browser must take it. */
  /** `selectorsHeld`: of some CSS selectors, those the document holds a match for (static/selectorMatch.ts, on this parse). */
  parsed: { html: string; references: DocumentReferences; template: TemplateKey; title: string; selectorsHeld: (selectors: readonly string[]) => string[] } | null;
  notStatic: string | null;
}

export interface StaticCaptureOptions {
  /** The template's learned script-made URLs. */
  fetches: readonly string[];
  /** The template's learned links beyond the document's own. */
  links: readonly string[];
  sink: ExchangeSink;
  /** --dedupePagesMinDepth (the page is deep enough): a document whose payload is archived already ends the page. */
  skipIfArchived?: boolean;
  /** --text: the document's text goes into the result's extracts. */
  text?: boolean;
}

/** The document's parse with its text (keepText), for the capture's text (the selector check keeps the tree alive anyway). */
const trees = new WeakMap<StaticDocument, ParsedDocument>();

/**
 * A page captured without a browser (hybrid capture's pages of a known template): its document fetched with the
 * request headers Chromium sends for a typed navigation and parsed with parse5, then what the document names, what
 * its stylesheets name and the template's learned script-made URLs fetched with Chromium's headers for their kind,
 * each stored through the same sink as the browser's capture (staticRequisites.ts).
 */
export class StaticPageLoader {
  constructor(private readonly options: StaticPageOptions) {}

  /** Throws (a one-line message) when the document could not be fetched at all. */
  async fetchDocument(pageUrl: string): Promise<StaticDocument> {
    const url = withoutHash(pageUrl);
    const headers = browserRequestHeaders({ url, kind: "document" }, this.options.identity);
    const cookie = await this.options.cookieHeader(url);
    if (cookie) headers.push(["Cookie", cookie]);
    let exchange: Exchange | null;
    try {
      exchange = await this.options.fetcher.asBrowser(url, headers, true);
    } catch (err) {
      throw new Error(`could not fetch the document: ${errorMessage(err).split("\n")[0]}`);
    }
    if (exchange === null) throw new Error("could not fetch the document: blocked");
    exchange.resourceType = "Document";
    exchange.pageDocument = true;
    const doc: StaticDocument = { url, exchange, parsed: null, notStatic: null };
    const refused = this.refusal(exchange);
    if (refused !== null) return { ...doc, notStatic: refused };
    const read = await decodedBody(exchange, MAX_STATIC_DOCUMENT);
    if ("over" in read) return { ...doc, notStatic: `over ${MAX_STATIC_DOCUMENT / 1024 / 1024} MiB decoded` };
    if ("error" in read) return { ...doc, notStatic: read.error };
    const encoding = documentEncoding(read.bytes, headerValue(exchange.responseHeaders, "content-type"));
    const html = new TextDecoder(encoding.label).decode(read.bytes);
    if (nestsDeeperThan(html, BROWSER_MAX_DEPTH)) return { ...doc, notStatic: `nested deeper than ${BROWSER_MAX_DEPTH} elements` };
    // What the browser takes the document for (WARC-Identified-Payload-Type, as capture/detectedType.ts reads it).
    exchange.identifiedPayloadType = `${mimeTypeOf(exchange)}; charset="${encoding.name}"`;
    const tree = parseDocument(html, { text: this.options.keepText === true });
    const references = documentReferences(tree, url);
    const parsed = { html, references, template: templateKey(tree, url, references), title: documentTitle(tree), selectorsHeld: documentSelectors(tree) };
    const result: StaticDocument = { ...doc, parsed };
    if (this.options.keepText) trees.set(result, tree);
    return result;
  }

  /** Why the browser must take this document before its body is read, or null. */
  private refusal(exchange: Exchange): string | null {
    const { status } = exchange;
    if (this.options.rateLimitStatusCodes?.includes(status)) return `a rate-limit status (${status})`;
    if (status >= 300 && status < 400) {
      const location = headerValue(exchange.responseHeaders, "location");
      return location !== undefined ? `a redirect (${status}) to ${location}` : `HTTP ${status} without a Location`;
    }
    if (status !== 200) return `an error status (${status})`;
    const mime = mimeTypeOf(exchange);
    if (mime !== "text/html") return `not HTML (${mime || "no Content-Type"})`;
    if (/^\s*attachment/i.test(headerValue(exchange.responseHeaders, "content-disposition") ?? "")) return "a download (Content-Disposition: attachment)";
    if (exchange.truncated) return `a truncated body (${exchange.truncated})`;
    if (exchange.body.kind === "file" && exchange.body.size > MAX_STATIC_DOCUMENT && !headerValue(exchange.responseHeaders, "content-encoding")) return `over ${MAX_STATIC_DOCUMENT / 1024 / 1024} MiB`;
    return null;
  }

  /**
   * Every URL a static capture of this document would fetch besides the document: requisites, then what the
   * stylesheets name (recursively through @import; a stylesheet body is read from the process's bounded cache of
   * stylesheet references, else fetched without storing), in the order capture() reports them; blocked URLs left
   * out. Redirect targets are not known without fetching: they are not listed (capture() reports them in `captured`).
   */
  async plannedUrls(doc: StaticDocument): Promise<string[]> {
    const parsed = parsedOf(doc);
    const plan = new RequisiteFetches(this.options, doc.url, "plan", null);
    return (await plan.run(documentFetches(parsed.references, doc.url))).fetched;
  }

  /** Drop the fetched document without storing it (deletes a temp body file). */
  discard(doc: StaticDocument): Promise<void> {
    return discardDocument(doc);
  }

  /** Store the document through `sink` (the caller decided to capture the page statically, or to browse it from this stored record). */
  storeDocument(doc: StaticDocument, sink: ExchangeSink): Promise<StoreOutcome> {
    return sink.store(doc.exchange);
  }

  /**
   * Capture the page statically: store the document, then fetch and store every requisite, what the stylesheets
   * name and `fetches`, each URL once per crawl (what `sink.hasStoredResponse` says is stored is skipped; the sink's
   * claims skip the rest), with Chromium's request headers for its kind plus Cookie; redirects of requisites
   * followed up to 5 hops, each hop stored; at most 6 fetches at a time; blocked URLs not fetched. Returns what the
   * browser path returns; `fetched`: the URLs asked for besides the document (requisites, what the stylesheets name,
   * then `fetches`), whether fetched now or found stored, blocked ones left out, redirect hops not (they are in
   * `captured`).
   */
  async capture(doc: StaticDocument, options: StaticCaptureOptions): Promise<PageLoadResult & { fetched: string[] }> {
    const parsed = parsedOf(doc);
    const { exchange } = doc;
    const document = documentSummary(doc);
    const duplicate = options.skipIfArchived === true && (await options.sink.isArchivedPayload(exchange.body, exchange.status));
    let stored: StoreOutcome;
    try {
      stored = await this.storeDocument(doc, options.sink);
    } catch (err) {
      return { document: null, title: "", links: [], error: `the page's document could not be stored: ${errorMessage(err)}`, truncated: [], fetched: [] };
    }
    if (duplicate) {
      // Archived already (--dedupePagesMinDepth): its revisit is written, nothing else of the page is fetched.
      return { document, title: "", links: [], error: null, truncated: [], duplicate: true, documentWacz: stored.wacz, captured: [document], fetched: [] };
    }
    const planned = documentFetches(parsed.references, doc.url);
    const learned = learnedFetches(options.fetches.map(withoutHash), doc.url, planned.length);
    const done = await new RequisiteFetches(this.options, doc.url, "capture", options.sink).run([...planned, ...learned]);
    // Counting the page done would leave what was not stored out of the archive for good: the attempt fails, and its
    // retry goes to the browser.
    if (done.lost.length) return { document: null, title: "", links: [], error: `what the page names could not be stored: ${done.lost.slice(0, 3).join(" ")}`, truncated: [], fetched: done.fetched };
    const links = pageLinkUrls([...parsed.references.links, ...options.links]);
    const favicon = parsed.references.requisites.find((r) => r.kind === "icon")?.url;
    // A copy of the document (spread by the caller) has no tree kept for it: parsed from its HTML again.
    const text = options.text ? documentText(trees.get(doc) ?? parseDocument(parsed.html)) : undefined;
    return {
      document,
      title: parsed.title,
      ...(favicon ? { favicon } : {}),
      links,
      ...(text !== undefined ? { extracts: { text, screenshots: [] } } : {}),
      error: null,
      truncated: [],
      documentWacz: stored.wacz,
      captured: [document, ...done.captured],
      fetched: done.fetched,
    };
  }
}

/** Drop a fetched document without storing it (deletes a temp body file). */
export function discardDocument(doc: StaticDocument): Promise<void> {
  return discardBody(doc.exchange);
}

/** The fetched document as the page's capture lists it. */
export function documentSummary(doc: StaticDocument): CapturedSummary {
  const { exchange } = doc;
  return { url: doc.url, status: exchange.status, mime: mimeTypeOf(exchange), resourceType: "Document", location: null, date: exchange.date };
}

function parsedOf(doc: StaticDocument): NonNullable<StaticDocument["parsed"]> {
  if (doc.parsed === null) throw new Error(`not a static page: ${doc.notStatic ?? "not parsed"}`);
  return doc.parsed;
}
