import { appendFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";

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
  }
}
