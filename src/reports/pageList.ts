import { appendFileSync, createReadStream, existsSync, mkdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";

/** One crawled page as listed in pages.jsonl / extraPages.jsonl. */
export interface PageEntry {
  id: string;
  url: string;
  /** RFC 3339 capture time of the page's document. */
  ts: string;
  title: string;
  status: number;
  mime: string;
  depth: number;
  seed: boolean;
  /** The page's extracted text (--text to-pages): what ReplayWeb.page's full-text search looks in. */
  text?: string;
}

const HEADERS = {
  pages: { format: "json-pages-1.0", id: "pages", title: "All Pages" },
  extraPages: { format: "json-pages-1.0", id: "extra-pages", title: "Extra Pages" },
};

/**
 * Appends crawled pages to pages/pages.jsonl (seeds) and pages/extraPages.jsonl (the rest). When a crawl
 * rolls over into more WACZ files, the pages of a later WACZ go to pages/<wacz name>/ instead.
 */
export class PageList {
  constructor(
    private readonly pagesDir: string,
    private readonly primaryWacz: string,
    /** Pages carry their text: the header says so (hasText), and ReplayWeb.page indexes it for search. */
    private readonly hasText = false,
    /** Told of each page listed (--writePagesToRedis). */
    private readonly onAdd: ((entry: PageEntry, waczFilename: string) => void) | null = null,
  ) {}

  files(waczFilename: string): { pagesFile: string; extraPagesFile: string } {
    const dir = waczFilename === this.primaryWacz ? this.pagesDir : join(this.pagesDir, waczFilename.replace(/\.wacz$/, ""));
    return { pagesFile: join(dir, "pages.jsonl"), extraPagesFile: join(dir, "extraPages.jsonl") };
  }

  add(entry: PageEntry, waczFilename: string): void {
    const isSeed = entry.seed;
    const { pagesFile, extraPagesFile } = this.files(waczFilename);
    const file = isSeed ? pagesFile : extraPagesFile;
    if (!existsSync(file)) {
      mkdirSync(dirname(file), { recursive: true });
      const header = isSeed ? HEADERS.pages : HEADERS.extraPages;
      appendFileSync(file, JSON.stringify(this.hasText ? { ...header, hasText: true } : header) + "\n");
    }
    appendFileSync(file, JSON.stringify(entry) + "\n");
    this.onAdd?.(entry, waczFilename);
  }
}

/** Which of these page URLs this WACZ's pages list keeps (in order). */
export type PageKeeper = (urls: string[]) => Promise<boolean[]>;

const FILTER_BATCH = 500;

/**
 * Copy a pages file with only the pages `keep` allows, each once: a page is listed by the process that
 * finished it, so an entry a process wrote before it lost the page (killed, or stalled and fenced) is
 * left out, and the page appears once in the crawl. Returns how many pages were left out.
 */
export async function filterPagesFile(source: string, dest: string, keep: PageKeeper): Promise<number> {
  const out = await open(dest, "w");
  const lines = createInterface({ input: createReadStream(source, { encoding: "utf8" }), crlfDelay: Infinity });
  const seen = new Set<string>();
  let batch: { line: string; url: string }[] = [];
  let header = true;
  let dropped = 0;
  const flush = async () => {
    const kept = await keep(batch.map((b) => b.url));
    let text = "";
    batch.forEach((b, i) => {
      if (kept[i]) text += b.line + "\n";
      else dropped += 1;
    });
    if (text) await out.write(text);
    batch = [];
  };
  try {
    for await (const line of lines) {
      if (!line.trim()) continue;
      if (header) {
        header = false;
        await out.write(line + "\n");
        continue;
      }
      const url = (JSON.parse(line) as { url: string }).url;
      if (seen.has(url)) {
        dropped += 1;
        continue;
      }
      seen.add(url);
      batch.push({ line, url });
      if (batch.length >= FILTER_BATCH) await flush();
    }
    if (batch.length) await flush();
  } finally {
    lines.close();
    await out.close();
  }
  return dropped;
}
