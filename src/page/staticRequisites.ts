// What a static capture fetches besides its document: the requisites the document names, what its stylesheets name
// (through @import, recursively) and the template's learned script-made URLs, each with the request headers Chromium
// sends for its kind, at most a few at a time.

import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import { headerValue, mimeTypeOf, type Exchange } from "../archive/exchange.js";
import { decodable, decoded } from "../fetch/contentDecoding.js";
import { discardBody, type FallbackFetcher } from "../fetch/fallbackFetcher.js";
import { errorMessage, logger } from "../log/logger.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";
import { withoutHash } from "../scope/urls.js";
import { RecentlyUsed } from "../util/recentlyUsed.js";
import { browserRequestHeaders, type BrowserIdentity, type BrowserRequest, type FetchDestination } from "../static/browserRequestHeaders.js";
import { cssReferences, type CssReferences } from "../static/cssReferences.js";
import type { DocumentReferences, Requisite } from "../static/documentReferences.js";
import type { PageLoadResult } from "./pageLoadResult.js";

/** What the capture lists of each exchange (capture/'s CapturedSummary, named through the load result: no capture/ import here). */
export type CapturedSummary = NonNullable<PageLoadResult["document"]>;

/** Fetches of one static capture in flight at once (Chromium's per-host connection limit). */
export const MAX_CONCURRENT_FETCHES = 6;
/** Redirects of a requisite followed (each hop stored), as far as a static capture goes. */
export const MAX_REQUISITE_REDIRECTS = 5;
/** A stylesheet read for what it names is read up to this size (decoded); a larger one is stored, not read. */
const MAX_STYLESHEET_READ = 5 * 1024 * 1024;
/** Stylesheets whose references the process keeps (LRU): the pages of a template name the same few. */
const STYLESHEET_CACHE_SIZE = 2000;

/** One URL a static capture fetches, with what decides its request headers and how it is recorded. */
export interface PlannedFetch {
  url: string;
  request: Omit<BrowserRequest, "url">;
  /** The CDP resource type the browser's capture would give it. */
  resourceType: string;
  /** Where it sits in the capture's tree (requisite index, then index within its stylesheet...): the order reported. */
  order: number[];
}

/** The decoded body, up to `cap` bytes: "over" past it, an error message when it cannot be decoded or read. */
export type BodyRead = { bytes: Uint8Array } | { over: true } | { error: string };

/** The body of `exchange` with its Content-Encoding undone (a body is stored as sent, so may still be encoded). */
export async function decodedBody(exchange: Exchange, cap: number): Promise<BodyRead> {
  const body = exchange.body;
  let source: Readable = body.kind === "bytes" ? Readable.from([Buffer.from(body.bytes.buffer, body.bytes.byteOffset, body.bytes.byteLength)]) : createReadStream(body.path);
  const encoding = exchange.bodyDecoded ? undefined : headerValue(exchange.responseHeaders, "content-encoding");
  if (encoding !== undefined && encoding.trim() !== "" && encoding.trim().toLowerCase() !== "identity") {
    if (!decodable(encoding)) {
      source.destroy();
      return { error: `Content-Encoding ${encoding} cannot be decoded here` };
    }
    source = decoded(source, encoding);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > cap) {
        source.destroy();
        return { over: true };
      }
      chunks.push(chunk);
    }
  } catch (err) {
    return { error: `the body cannot be decoded: ${errorMessage(err)}` };
  }
  return { bytes: Buffer.concat(chunks) };
}

/** What the stylesheets this process fetched name, by URL (their bodies are not kept), shared by every static capture. */
const stylesheets = new RecentlyUsed<string, CssReferences>(STYLESHEET_CACHE_SIZE);

const NO_REFERENCES: CssReferences = { imports: [], urls: [], fonts: [] };

/** A preload's `as` as a request destination and the resource type the browser gives it. */
const PRELOAD_AS: Record<string, { destination: FetchDestination; resourceType: string }> = {
  image: { destination: "image", resourceType: "Image" },
  style: { destination: "style", resourceType: "Stylesheet" },
  script: { destination: "script", resourceType: "Script" },
  font: { destination: "font", resourceType: "Font" },
  fetch: { destination: "empty", resourceType: "Fetch" },
  audio: { destination: "audio", resourceType: "Media" },
  video: { destination: "video", resourceType: "Media" },
  track: { destination: "track", resourceType: "TextTrack" },
};

/** A requisite's request (kind, destination, cors) and the CDP resource type Chromium reports for it. */
function requisiteRequest(requisite: Requisite): { request: Omit<BrowserRequest, "url">; resourceType: string } {
  const { kind, from } = requisite;
  switch (kind) {
    case "image":
      return { request: { kind }, resourceType: "Image" };
    case "icon":
      // The browser fetches the favicon itself, not the page's parser: DevTools lists it as Other.
      return { request: { kind }, resourceType: "Other" };
    case "stylesheet":
      return { request: { kind }, resourceType: "Stylesheet" };
    case "script":
      return { request: { kind }, resourceType: "Script" };
    case "font":
      return { request: { kind }, resourceType: "Font" };
    case "manifest":
      return { request: { kind }, resourceType: "Manifest" };
    case "media":
      return { request: { kind, destination: /^audio\b/.test(from) ? "audio" : /^track\b/.test(from) ? "track" : "video" }, resourceType: /^track\b/.test(from) ? "TextTrack" : "Media" };
    case "frame":
      return { request: { kind, destination: /^frame\b/.test(from) ? "frame" : "iframe" }, resourceType: "Document" };
    case "other":
      if (/^embed\b/.test(from)) return { request: { kind, destination: "embed" }, resourceType: "Other" };
      if (/prefetch/.test(from)) return { request: { kind, destination: "empty" }, resourceType: "Other" };
      return { request: { kind }, resourceType: "Other" };
    case "preload": {
      if (/modulepreload/.test(from)) return { request: { kind, destination: "script", cors: true }, resourceType: "Script" };
      if (/imagesrcset/.test(from)) return { request: { kind, destination: "image" }, resourceType: "Image" };
      const as = PRELOAD_AS[/as=(\S*)/.exec(from)?.[1] ?? ""];
      return as ? { request: { kind, destination: as.destination, ...(as.destination === "empty" ? { cors: true } : {}) }, resourceType: as.resourceType } : { request: { kind, destination: "empty", cors: true }, resourceType: "Other" };
    }
    default:
      return { request: { kind }, resourceType: "Other" };
  }
}

/** What the document names, in document order. */
export function documentFetches(references: DocumentReferences, documentUrl: string): PlannedFetch[] {
  return references.requisites.map((requisite, i) => {
    const { request, resourceType } = requisiteRequest(requisite);
    return { url: requisite.url, request: { ...request, ...(requisite.cors ? { cors: true } : {}), referrer: documentUrl }, resourceType, order: [i] };
  });
}

/** What a stylesheet names: @import targets, then fonts and images, fetched from the document, the stylesheet the referrer. */
function stylesheetFetches(references: CssReferences, sheetUrl: string, documentUrl: string, order: number[]): PlannedFetch[] {
  const initiatorOrigin = new URL(documentUrl).origin;
  const fonts = new Set(references.fonts);
  const named = [
    ...references.imports.map((url) => ({ url, request: { kind: "stylesheet" as const }, resourceType: "Stylesheet" })),
    ...references.urls.map((url) => (fonts.has(url) ? { url, request: { kind: "font" as const }, resourceType: "Font" } : { url, request: { kind: "image" as const }, resourceType: "Image" })),
  ];
  return named.map((entry, i) => ({ url: entry.url, request: { ...entry.request, referrer: sheetUrl, initiatorOrigin }, resourceType: entry.resourceType, order: [...order, i] }));
}

const IMAGE_PATH = /\.(?:png|jpe?g|gif|webp|avif|svg|ico|bmp)$/i;

/**
 * A script-made URL learned from the template's browsed pages: its kind is guessed from its path (an image, a
 * stylesheet, a script), else it is taken for a script's fetch call (cors, destination empty).
 */
export function learnedFetches(urls: readonly string[], documentUrl: string, after: number): PlannedFetch[] {
  return urls.map((url, i) => {
    const path = new URL(url).pathname;
    const order = [after + i];
    if (IMAGE_PATH.test(path)) return { url, request: { kind: "image", referrer: documentUrl }, resourceType: "Image", order };
    if (/\.css$/i.test(path)) return { url, request: { kind: "stylesheet", referrer: documentUrl }, resourceType: "Stylesheet", order };
    if (/\.m?js$/i.test(path)) return { url, request: { kind: "script", referrer: documentUrl }, resourceType: "Script", order };
    return { url, request: { kind: "preload", destination: "empty", cors: true, referrer: documentUrl }, resourceType: "Fetch", order };
  });
}

export interface RequisiteFetchOptions {
  fetcher: FallbackFetcher;
  identity: BrowserIdentity;
  cookieHeader: (url: string) => Promise<string | null>;
}

/** What a static capture's fetches did: the URLs asked for (each once, in tree order) and every exchange received. */
export interface FetchesDone {
  fetched: string[];
  captured: CapturedSummary[];
  /** URLs whose exchange was fetched but could not be stored: the page is not captured whole. */
  lost: string[];
}

type Visit = "capture" | "plan";

/**
 * The fetches of one static capture (or of its plan). Each URL once; stylesheets' references read as they arrive,
 * their named URLs fetched in turn; at most MAX_CONCURRENT_FETCHES at a time.
 */
export class RequisiteFetches {
  /** URLs taken in this run, the page's document among them. */
  private readonly taken = new Set<string>();
  private readonly fetched: { url: string; order: number[] }[] = [];
  private readonly captured: { summary: CapturedSummary; order: number[] }[] = [];
  private readonly lost: string[] = [];
  private readonly queue: PlannedFetch[] = [];
  private running = 0;
  private finished: (() => void) | null = null;

  constructor(
    private readonly options: RequisiteFetchOptions,
    private readonly documentUrl: string,
    private readonly visit: Visit,
    /** Where captured exchanges go (visit "capture"). */
    private readonly sink: ExchangeSink | null,
  ) {
    this.taken.add(documentUrl);
  }

  /** Fetch (or plan) `planned` and what their stylesheets name; resolves once all are done. */
  async run(planned: readonly PlannedFetch[]): Promise<FetchesDone> {
    const done = new Promise<void>((resolve) => (this.finished = resolve));
    this.enqueue(planned);
    if (this.running === 0) this.finished?.();
    await done;
    const byOrder = (a: { order: number[] }, b: { order: number[] }) => compareOrder(a.order, b.order);
    return { fetched: [...this.fetched].sort(byOrder).map((f) => f.url), captured: [...this.captured].sort(byOrder).map((c) => c.summary), lost: [...this.lost] };
  }

  private enqueue(planned: readonly PlannedFetch[]): void {
    for (const item of planned) {
      if (this.taken.has(item.url)) continue;
      this.taken.add(item.url);
      this.queue.push(item);
    }
    this.pump();
  }

  private pump(): void {
    while (this.running < MAX_CONCURRENT_FETCHES && this.queue.length) {
      const item = this.queue.shift()!;
      this.running++;
      void this.one(item)
        .catch((err: unknown) => logger.debug("capture", "a static capture's fetch failed", { url: item.url, page: this.documentUrl, error: errorMessage(err) }))
        .finally(() => {
          this.running--;
          this.pump();
          if (this.running === 0 && this.queue.length === 0) this.finished?.();
        });
    }
  }

  private blocked(url: string): boolean {
    return this.options.fetcher.rules.blocking?.judge({ url, frameUrl: "", navigation: false }).action === "block";
  }

  private async one(item: PlannedFetch): Promise<void> {
    const stylesheet = item.resourceType === "Stylesheet";
    if (this.visit === "plan") {
      if (this.blocked(item.url)) return;
      this.fetched.push({ url: item.url, order: item.order });
      if (stylesheet) this.enqueue(stylesheetFetches(await this.knownReferences(item), item.url, this.documentUrl, item.order));
      return;
    }
    const stored = await this.sink!.storedFinalStatus(item.url);
    if (stored !== null) {
      this.fetched.push({ url: item.url, order: item.order });
      // Listed as the page's, as a browser capture lists what it fetched and the crawl had stored (the --qa page record
      // names it); its type is not known without reading it. A stored 404 is not fetched again on every page that
      // names it: the archive would not change.
      this.captured.push({ summary: { url: item.url, status: stored, mime: "", resourceType: item.resourceType, location: null, date: new Date() }, order: item.order });
      if (stylesheet && stored === 200) this.enqueue(stylesheetFetches(await this.knownReferences(item), item.url, this.documentUrl, item.order));
      return;
    }
    const final = await this.fetchAndStore(item);
    if (final === null) return;
    this.fetched.push({ url: item.url, order: item.order });
    if (stylesheet && final.references) this.enqueue(stylesheetFetches(final.references, final.url, this.documentUrl, item.order));
  }

  /** The request headers of `item` sent to `url` (itself, or where it redirected), Cookie included when the browser sends it. */
  private async headersFor(item: PlannedFetch, url: string): Promise<[string, string][]> {
    const headers = browserRequestHeaders({ ...item.request, url }, this.options.identity);
    if (!sendsCookies(item.request, url, this.documentUrl)) return headers;
    const cookie = await this.options.cookieHeader(url);
    if (cookie) headers.push(["Cookie", cookie]);
    return headers;
  }

  /**
   * Fetch `item` and store each hop of its redirects (up to MAX_REQUISITE_REDIRECTS): null when blocked. A stylesheet's
   * references are read (and kept in the process's cache) before the sink takes its body.
   */
  private async fetchAndStore(item: PlannedFetch): Promise<{ url: string; references: CssReferences | null } | null> {
    let url = item.url;
    for (let hop = 0; ; hop++) {
      const exchange = await this.options.fetcher.asBrowser(url, await this.headersFor(item, url), false, this.documentUrl);
      if (exchange === null) return hop === 0 ? null : { url, references: null };
      exchange.resourceType = item.resourceType;
      exchange.pageDocument = false;
      const location = headerValue(exchange.responseHeaders, "location") ?? null;
      const order = [...item.order, -1, hop];
      this.captured.push({ summary: { url, status: exchange.status, mime: mimeTypeOf(exchange), resourceType: item.resourceType, location, date: exchange.date }, order });
      let references: CssReferences | null = null;
      if (item.resourceType === "Stylesheet" && exchange.status === 200) {
        references = await this.readStylesheet(exchange, url);
        stylesheets.set(item.url, references);
      }
      await this.store(exchange);
      const next = exchange.status >= 300 && exchange.status < 400 && location !== null ? redirectTarget(location, url) : null;
      if (next === null || hop >= MAX_REQUISITE_REDIRECTS || this.taken.has(next)) return { url, references };
      this.taken.add(next);
      if (await this.sink!.hasStoredResponse(next)) return { url: next, references: item.resourceType === "Stylesheet" ? (stylesheets.get(next) ?? null) : null };
      url = next;
    }
  }

  private async store(exchange: Exchange): Promise<void> {
    if (exchange.truncated === "disconnect") {
      // Cut off by the network: storing it would claim the URL for good with a partial body.
      logger.debug("capture", "a static capture's body was cut off; not stored", { url: exchange.url, page: this.documentUrl });
      await discardBody(exchange);
      return;
    }
    try {
      await this.sink!.store(exchange);
    } catch (err) {
      logger.warn("capture", "a static capture's exchange could not be stored", { url: exchange.url, page: this.documentUrl, error: errorMessage(err) });
      this.lost.push(exchange.url);
    }
  }

  private async readStylesheet(exchange: Exchange, url: string): Promise<CssReferences> {
    const read = await decodedBody(exchange, MAX_STYLESHEET_READ);
    if (!("bytes" in read)) {
      logger.debug("capture", "a stylesheet could not be read for what it names", { url, page: this.documentUrl, ...("error" in read ? { error: read.error } : { over: MAX_STYLESHEET_READ }) });
      return NO_REFERENCES;
    }
    // CSS is UTF-8 unless it says otherwise; the URLs it names are ASCII in practice either way.
    return cssReferences(new TextDecoder("utf-8").decode(read.bytes), url);
  }

  /** What a stylesheet stored already (or only planned) names: from the process's cache, else fetched without storing. */
  private async knownReferences(item: PlannedFetch): Promise<CssReferences> {
    const known = stylesheets.get(item.url);
    if (known) return known;
    let url = item.url;
    for (let hop = 0; hop <= MAX_REQUISITE_REDIRECTS; hop++) {
      let exchange: Exchange | null;
      try {
        exchange = await this.options.fetcher.asBrowser(url, await this.headersFor(item, url), false, this.documentUrl);
      } catch (err) {
        logger.debug("capture", "a stylesheet could not be fetched for what it names", { url, page: this.documentUrl, error: errorMessage(err) });
        return NO_REFERENCES;
      }
      if (exchange === null) return NO_REFERENCES;
      try {
        const location = headerValue(exchange.responseHeaders, "location");
        const next = exchange.status >= 300 && exchange.status < 400 && location !== undefined ? redirectTarget(location, url) : null;
        if (next !== null) {
          url = next;
          continue;
        }
        if (exchange.status !== 200) return NO_REFERENCES;
        const references = await this.readStylesheet(exchange, url);
        stylesheets.set(item.url, references);
        return references;
      } finally {
        await discardBody(exchange);
      }
    }
    return NO_REFERENCES;
  }
}

/**
 * Whether the browser sends cookies with the request: not for the manifest (fetched without credentials unless
 * crossorigin=use-credentials), nor for a cors-mode request (fonts, module scripts, crossorigin elements, a script's
 * fetch) to another origin than the one it is made from (credentials "same-origin").
 */
function sendsCookies(request: Omit<BrowserRequest, "url">, url: string, documentUrl: string): boolean {
  if (request.kind === "manifest") return false;
  const cors = request.cors === true || request.kind === "font" || request.destination === "font";
  if (!cors) return true;
  return new URL(url).origin === (request.initiatorOrigin ?? new URL(request.referrer ?? documentUrl).origin);
}

/** Where a redirect goes, fragment removed; null when it names no http(s) URL. */
function redirectTarget(location: string, from: string): string | null {
  try {
    const next = new URL(location, from);
    return next.protocol === "http:" || next.protocol === "https:" ? withoutHash(next.href) : null;
  } catch {
    return null;
  }
}

function compareOrder(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
