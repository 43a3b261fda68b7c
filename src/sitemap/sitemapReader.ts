import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { XMLToSitemapIndexStream, XMLToSitemapItemStream, type IndexItem, type SitemapItem } from "sitemap";
import { capped, discard, forward, plainFetch } from "../fetch/plainFetch.js";
import type { ConnectionRules } from "../fetch/connectionRules.js";
import { errorMessage, logger } from "../log/logger.js";
import { parseW3cDate } from "./w3cDate.js";

/** One page a sitemap lists. */
export interface SitemapEntry {
  url: string;
  /** Start of its <lastmod>; null when it has none (or one that is not a W3C date). */
  lastmod: Date | null;
}

export interface SitemapReaderOptions {
  /** The crawl's address policy and --header rules (fetch/connectionRules.ts). */
  rules: Pick<ConnectionRules, "addresses" | "headers">;
  userAgent: string | null;
  /** Time allowed to read one sitemap file whole (a total deadline: a server dripping bytes cannot hold the reading). */
  timeoutMs?: number;
  /** Child sitemaps an index dates before this are not read: none of their pages can be newer. */
  notBefore?: Date | null;
  /** Most sitemap files read in all (indexes included). */
  maxSitemaps?: number;
  /** Most levels of sitemap indexes followed below the first sitemap. */
  maxDepth?: number;
  /** Largest sitemap file, decompressed (the protocol allows 50 MB). */
  maxBytes?: number;
}

export interface SitemapReadCounts {
  /** Sitemap files read (indexes included). */
  sitemaps: number;
  /** Sitemap files that could not be fetched or read to the end. */
  failed: number;
  /** Child sitemaps not read: the index dates them before --sitemapFromDate, or the bounds were reached. */
  skipped: number;
}

const DEFAULT_MAX_SITEMAPS = 1000;
const DEFAULT_MAX_DEPTH = 4;
const DEFAULT_MAX_BYTES = 100 * 1024 * 1024;
// Generous: a file is read while its pages are queued; a 50 MB one on a slow link still fits.
const DEFAULT_TIMEOUT_MS = 120_000;
/** Enough to get past an XML declaration, comments and a stylesheet instruction to the root element. */
const SNIFF_BYTES = 64 * 1024;
const ROOT_ELEMENT = /<(?:[A-Za-z_][\w.-]*:)?(urlset|sitemapindex)[\s/>]/;

/**
 * Stream the pages listed by sitemaps, following sitemap indexes (depth-first, each sitemap read once,
 * within bounds). Plain XML, gzipped files (.xml.gz, whatever their Content-Encoding) and text sitemaps
 * (one URL a line) are read. Nothing is held but the current document's parser and the list of child
 * sitemaps still to read; a sitemap that fails is logged and skipped.
 */
export async function* readSitemaps(roots: string[], options: SitemapReaderOptions, counts: SitemapReadCounts): AsyncGenerator<SitemapEntry> {
  const maxSitemaps = options.maxSitemaps ?? DEFAULT_MAX_SITEMAPS;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const visited = new Set<string>();
  const todo: { url: string; depth: number }[] = roots.map((url) => ({ url, depth: 0 })).reverse();
  while (todo.length) {
    const { url, depth } = todo.pop()!;
    if (visited.has(url)) continue;
    if (visited.size >= maxSitemaps) {
      counts.skipped += todo.length + 1;
      logger.warn("sitemap", `more than ${maxSitemaps} sitemap files: the rest are not read`, { notRead: todo.length + 1 });
      return;
    }
    visited.add(url);
    counts.sitemaps += 1;
    let document: SitemapDocument;
    try {
      document = await openSitemap(url, options);
    } catch (err) {
      counts.failed += 1;
      logger.warn("sitemap", "sitemap not read", { url, error: errorMessage(err) });
      continue;
    }
    let listed = 0;
    try {
      if (document.kind === "index") {
        const children: string[] = [];
        for await (const item of document.items) {
          const lastmod = item.lastmod ? parseW3cDate(item.lastmod)?.end ?? null : null;
          if (lastmod && options.notBefore && lastmod < options.notBefore) counts.skipped += 1;
          else children.push(new URL(item.url, url).href);
        }
        if (depth >= maxDepth) {
          counts.skipped += children.length;
          logger.warn("sitemap", `sitemap indexes nested deeper than ${maxDepth} levels: not followed`, { url, sitemaps: children.length });
        } else {
          for (const child of children.reverse()) todo.push({ url: child, depth: depth + 1 });
        }
        logger.debug("sitemap", "sitemap index read", { url, sitemaps: children.length });
      } else {
        for await (const entry of document.entries) {
          listed += 1;
          yield entry;
        }
        logger.debug("sitemap", "sitemap read", { url, pages: listed, format: document.kind });
      }
      if (document.xmlErrors.length) {
        counts.failed += 1;
        logger.warn("sitemap", "sitemap is not well-formed XML: what could be read of it was", { url, pagesRead: listed, xmlErrors: document.xmlErrors.length, first: document.xmlErrors[0] });
      }
    } catch (err) {
      counts.failed += 1;
      logger.warn("sitemap", "sitemap not read to the end", { url, pagesRead: listed, error: errorMessage(err) });
    } finally {
      document.close();
    }
  }
}

type SitemapDocument = (
  | { kind: "index"; items: AsyncIterable<IndexItem> }
  | { kind: "urlset" | "text"; entries: AsyncIterable<SitemapEntry> }
) & {
  close(): void;
  /** Malformed XML met so far (the parser reads on past it). */
  xmlErrors: string[];
};

/** Past this many XML errors a document is given up. */
const MAX_XML_ERRORS = 20;

async function openSitemap(url: string, options: SitemapReaderOptions): Promise<SitemapDocument> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const response = await plainFetch(url, { rules: options.rules, userAgent: options.userAgent, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, maxBytes });
  if (response.status < 200 || response.status >= 300) {
    discard(response.body);
    throw new Error(`HTTP ${response.status}`);
  }
  // A .xml.gz file is gzip data itself, whether or not it was also sent with a Content-Encoding.
  let { head, rest } = await peek(response.body, (h) => h.length >= 2);
  if (head[0] === 0x1f && head[1] === 0x8b) rest = capped(forward(rest, createGunzip()), maxBytes);
  ({ head, rest } = await peek(rest, knowsItsKind));
  const close = () => rest.destroy();
  const xmlErrors: string[] = [];
  // Like a browser, read on past malformed XML (a stray "&", a tag left open) rather than lose the rest.
  const lenient = <P extends XMLToSitemapIndexStream | XMLToSitemapItemStream>(parser: P): P => {
    parser.saxStream.on("error", (err: Error) => {
      xmlErrors.push(err.message.split("\n")[0]);
      if (xmlErrors.length >= MAX_XML_ERRORS) parser.destroy(new Error(`${MAX_XML_ERRORS} XML errors, the first: ${xmlErrors[0]}`));
    });
    return forward(rest, parser) as P;
  };
  const text = head.toString("latin1");
  const root = ROOT_ELEMENT.exec(text)?.[1];
  if (root === "sitemapindex") {
    return { kind: "index", items: lenient(new XMLToSitemapIndexStream({ logger: false })), close, xmlErrors };
  }
  if (root === "urlset") {
    return { kind: "urlset", entries: urlsetEntries(lenient(new XMLToSitemapItemStream({ logger: false }))), close, xmlErrors };
  }
  if (/^https?:\/\//i.test(withoutBom(text).trimStart())) {
    return { kind: "text", entries: textEntries(rest), close, xmlErrors };
  }
  close();
  throw new Error("not a sitemap (neither <urlset>, <sitemapindex> nor a list of URLs)");
}

async function* urlsetEntries(items: AsyncIterable<SitemapItem>): AsyncGenerator<SitemapEntry> {
  for await (const item of items) {
    // An invalid <loc> leaves the item's url empty (the parser notes the error and goes on).
    if (!item.url) continue;
    yield { url: item.url, lastmod: item.lastmod ? parseW3cDate(item.lastmod)?.start ?? null : null };
  }
}

async function* textEntries(body: Readable): AsyncGenerator<SitemapEntry> {
  for await (const line of createInterface({ input: body, crlfDelay: Infinity })) {
    const url = line.replace(/^\uFEFF/, "").trim();
    if (/^https?:\/\//i.test(url)) yield { url, lastmod: null };
  }
}

/** Read from `body` until `enough(head)` (or the end, or SNIFF_BYTES); `rest` replays all of it. */
async function peek(body: Readable, enough: (head: Buffer) => boolean, limit = SNIFF_BYTES): Promise<{ head: Buffer; rest: Readable }> {
  const iterator = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let head = Buffer.alloc(0);
  let ended = false;
  while (!enough(head) && head.length < limit) {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      break;
    }
    chunks.push(Buffer.from(next.value));
    head = Buffer.concat(chunks);
  }
  async function* replay(): AsyncGenerator<Buffer> {
    if (head.length) yield head;
    if (ended) return;
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield Buffer.from(next.value);
    }
  }
  const rest = Readable.from(replay(), { objectMode: false });
  rest.on("close", () => void iterator.return?.());
  return { head, rest };
}

/** Whether the start of a document tells what kind it is: its root element, or a first line that is no markup. */
function knowsItsKind(head: Buffer): boolean {
  const text = head.toString("latin1");
  if (ROOT_ELEMENT.test(text)) return true;
  const start = withoutBom(text).trimStart();
  return start.length > 0 && !start.startsWith("<") && head.includes(0x0a);
}

/** The UTF-8 byte order mark, as read in latin1. */
function withoutBom(latin1: string): string {
  return latin1.replace(/^\xEF\xBB\xBF/, "");
}
