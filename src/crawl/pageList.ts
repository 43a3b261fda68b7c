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
}

const HEADERS = {
  pages: { format: "json-pages-1.0", id: "pages", title: "All Pages" },
  extraPages: { format: "json-pages-1.0", id: "extra-pages", title: "Extra Pages" },
};

/** Appends crawled pages to pages/pages.jsonl (seeds) and pages/extraPages.jsonl (the rest). */
export class PageList {
  readonly pagesFile: string;
  readonly extraPagesFile: string;

  constructor(pagesDir: string) {
    this.pagesFile = join(pagesDir, "pages.jsonl");
    this.extraPagesFile = join(pagesDir, "extraPages.jsonl");
  }

  add(entry: PageEntry): void {
    const isSeed = entry.seed;
    const file = isSeed ? this.pagesFile : this.extraPagesFile;
    if (!existsSync(file)) {
      mkdirSync(dirname(file), { recursive: true });
      appendFileSync(file, JSON.stringify(isSeed ? HEADERS.pages : HEADERS.extraPages) + "\n");
    }
    appendFileSync(file, JSON.stringify(entry) + "\n");
  }
}
