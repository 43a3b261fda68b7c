import { appendFileSync, createReadStream, existsSync, mkdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { createInterface } from "node:readline";
import { syncDirectory } from "../durable/syncDirectory.js";

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
 * rolls over into more WACZ files, the pages of a later WACZ go to pages/<wacz name>/ instead. A page
 * counts as listed (and is then marked done) only once an fdatasync covers its line: a host crash must
 * not take the listing of a page the crawl state calls done. Pages listed while a sync runs share the next.
 */
export class PageList {
  /** Per file: bytes known to be on disk, and the sync under way. */
  private readonly syncs = new Map<string, { syncedUpTo: number; running: Promise<void> | null }>();
  /** Per file: its name on disk (its folder synced once this process first wrote to it). */
  private readonly entries = new Map<string, Promise<void>>();

  constructor(
    private readonly pagesDir: string,
    private readonly primaryWacz: string,
    /** Pages carry their text: the header says so (hasText), and ReplayWeb.page indexes it for search. */
    private readonly hasText = false,
    /** Told of each page listed (--writePagesToRedis). */
    private readonly onAdd: ((entry: PageEntry, waczFilename: string) => void) | null = null,
    /**
     * `durable: false`: a page counts as listed once appended, unsynced (tests and the benchmark). `onSynced`:
     * told that a list (its path in the collection: "pages/...") is on disk up to `bytes` (the power-loss test).
     */
    private readonly durability: { durable: boolean; onSynced?: (file: string, bytes: number) => void; onEntrySynced?: (file: string) => void } = { durable: true },
  ) {}

  files(waczFilename: string): { pagesFile: string; extraPagesFile: string } {
    const dir = waczFilename === this.primaryWacz ? this.pagesDir : join(this.pagesDir, waczFilename.replace(/\.wacz$/, ""));
    return { pagesFile: join(dir, "pages.jsonl"), extraPagesFile: join(dir, "extraPages.jsonl") };
  }

  async add(entry: PageEntry, waczFilename: string): Promise<void> {
    const isSeed = entry.seed;
    const { pagesFile, extraPagesFile } = this.files(waczFilename);
    const file = isSeed ? pagesFile : extraPagesFile;
    let createdDir: string | undefined;
    if (!existsSync(file)) {
      createdDir = mkdirSync(dirname(file), { recursive: true });
      const header = isSeed ? HEADERS.pages : HEADERS.extraPages;
      appendFileSync(file, JSON.stringify(this.hasText ? { ...header, hasText: true } : header) + "\n");
    }
    // Also a list an earlier run created: it may have died before its folder was synced.
    if (this.durability.durable && !this.entries.has(file)) this.entries.set(file, this.syncEntry(file, createdDir));
    // Appended whole and in order at once (synchronously); synced after.
    appendFileSync(file, JSON.stringify(entry) + "\n");
    if (this.durability.durable) {
      await this.entries.get(file);
      await this.synced(file);
    }
    this.onAdd?.(entry, waczFilename);
  }

  /** The list's name on disk: its folder synced, and the folder above the first one created for it. */
  private async syncEntry(file: string, createdDir: string | undefined): Promise<void> {
    await syncDirectory(dirname(file));
    if (createdDir) await syncDirectory(dirname(createdDir));
    this.durability.onEntrySynced?.(relative(dirname(this.pagesDir), file));
  }

  /** Resolves once everything appended to `file` so far is on disk: one fdatasync for the pages listed meanwhile. */
  private async synced(file: string): Promise<void> {
    let state = this.syncs.get(file);
    if (!state) this.syncs.set(file, (state = { syncedUpTo: 0, running: null }));
    const handle = await open(file, "r");
    try {
      const appended = (await handle.stat()).size;
      while (state.syncedUpTo < appended) {
        state.running ??= (async () => {
          const upTo = (await handle.stat()).size;
          await handle.datasync();
          if (upTo > state.syncedUpTo) {
            state.syncedUpTo = upTo;
            this.durability.onSynced?.(relative(dirname(this.pagesDir), file), upTo);
          }
        })().finally(() => (state.running = null));
        await state.running;
      }
    } finally {
      await handle.close();
    }
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
