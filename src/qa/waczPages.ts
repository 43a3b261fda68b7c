import { createInterface } from "node:readline";
import { openWacz } from "../wacz/reader/index.js";

/** A page listed in a WACZ's pages/pages.jsonl or pages/extraPages.jsonl: what QA replays. */
export interface ListedPage {
  url: string;
  /** The capture time as listed (ISO 8601), when given. */
  ts?: string;
  id?: string;
  title?: string;
  mime?: string;
  /** The page's text as the crawl extracted it (--text to-pages), when listed. */
  text?: string;
  /**
   * A hybrid crawl captured it without a browser (the WACZ's reports/capture.jsonl): its crawl text is its document's,
   * not what a browser showed once its scripts ran.
   */
  capturedStatically?: true;
}

const PAGE_LISTS = ["pages/pages.jsonl", "pages/extraPages.jsonl"];
/** A hybrid crawl's report of how each page was captured (reports/captureReport.ts), packaged in its WACZ. */
const CAPTURE_REPORT = "reports/capture.jsonl";

/** Every page the WACZ lists (seeds first, as browsertrix-crawler's QA reads them), header lines left out. */
export async function listedPages(waczPath: string): Promise<ListedPage[]> {
  const wacz = await openWacz(waczPath);
  const lists = new Map<string, string>();
  let staticPages = new Set<string>();
  try {
    for (const name of PAGE_LISTS) {
      if (!wacz.hasEntry(name)) continue;
      // Streamed, not readEntry(): a list with every page's text (--text to-pages) may pass its 50 MB cap.
      const chunks: Buffer[] = [];
      for await (const chunk of await wacz.openEntryStream(name)) chunks.push(chunk as Buffer);
      lists.set(name, Buffer.concat(chunks).toString("utf8"));
    }
    if (wacz.hasEntry(CAPTURE_REPORT)) staticPages = await staticallyCaptured(createInterface({ input: await wacz.openEntryStream(CAPTURE_REPORT), crlfDelay: Infinity }));
  } finally {
    await wacz.close();
  }
  return PAGE_LISTS.flatMap((name) => pagesOfList(lists.get(name) ?? "")).map((page) => (staticPages.has(page.url) ? { ...page, capturedStatically: true } : page));
}

/** The pages a capture report's lines say were captured without a browser (a page's last line counts: a retry is browsed). */
export async function staticallyCaptured(lines: AsyncIterable<string>): Promise<Set<string>> {
  const latest = new Map<string, string>();
  for await (const line of lines) {
    try {
      const entry = JSON.parse(line) as { url?: unknown; capture?: unknown };
      if (typeof entry.url === "string" && typeof entry.capture === "string") latest.set(entry.url, entry.capture);
    } catch {
      // not a line of the report: skipped
    }
  }
  return new Set([...latest].filter(([, capture]) => capture === "static").map(([url]) => url));
}

/** The page lines of a json-pages-1.0 file: objects with a string url. */
export function pagesOfList(text: string): ListedPage[] {
  const pages: ListedPage[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof value !== "object" || value === null) continue;
    const fields = value as Record<string, unknown>;
    if (typeof fields.url !== "string") continue;
    const str = (key: string): string | undefined => (typeof fields[key] === "string" ? (fields[key] as string) : undefined);
    pages.push({ url: fields.url, ts: str("ts"), id: str("id"), title: str("title"), mime: str("mime"), text: str("text") });
  }
  return pages;
}
