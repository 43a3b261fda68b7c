import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { createInterface } from "node:readline";
import { AppendLog, type AppendLogOptions } from "../durable/appendLog.js";

/**
 * How far a listed page got, in browsertrix-crawler's numbers (its LoadState; 0 failed and 1 content loaded
 * are never listed): 2 its document loaded (one the browser does not render: a PDF, an image), 3 the rendered
 * page was read (title, links, text), 4 its behaviors ran to their end too (not off, not cut by --behaviorTimeout).
 */
export const LoadState = { FULL_PAGE_LOADED: 2, EXTRACTION_DONE: 3, BEHAVIORS_DONE: 4 } as const;
export type LoadState = (typeof LoadState)[keyof typeof LoadState];

/** One crawled page as listed in pages.jsonl / extraPages.jsonl. */
export interface PageEntry {
  id: string;
  url: string;
  /** RFC 3339 capture time of the page's document. */
  ts: string;
  title: string;
  loadState: LoadState;
  status: number;
  mime: string;
  depth: number;
  seed: boolean;
  /** The favicon the browser showed for the page (ReplayWeb.page shows it in its page list), when it had one. */
  favIconUrl?: string;
  /** The page's extracted text (--text to-pages): what ReplayWeb.page's full-text search looks in. */
  text?: string;
}

const HEADERS = {
  pages: { format: "json-pages-1.0", id: "pages", title: "All Pages" },
  extraPages: { format: "json-pages-1.0", id: "extra-pages", title: "Extra Pages" },
};

/**
 * Appends crawled pages to pages/pages.jsonl (seeds) and pages/extraPages.jsonl (the rest). When a crawl
 * rolls over into more WACZ files, the pages of a later WACZ go to pages/<wacz name>/ instead. Each list is an
 * append log (durable/appendLog.ts): a line torn by a host crash is cut off when the list is opened again, and a
 * page counts as listed (and is then marked done) only once an fdatasync covers its line: a host crash must not
 * take the listing of a page the crawl state calls done. Pages listed while a sync runs share the next.
 */
export class PageList {
  /** Per file: its open log. */
  private readonly logs = new Map<string, Promise<AppendLog>>();

  constructor(
    private readonly pagesDir: string,
    private readonly primaryWacz: string,
    /** Pages carry their text: the header says so (hasText), and ReplayWeb.page indexes it for search. */
    private readonly hasText = false,
    /** Told of each page listed (--writePagesToRedis). */
    private readonly onAdd: ((entry: PageEntry, waczFilename: string) => void) | null = null,
    /**
     * `durable: false`: a page counts as listed once appended, unsynced (tests and benchmarks); `openFile`: how
     * lists are opened (tests); `syncLog`: the power-loss test's.
     */
    private readonly writing: Pick<AppendLogOptions, "durable" | "openFile" | "syncLog"> = {},
  ) {}

  files(waczFilename: string): { pagesFile: string; extraPagesFile: string } {
    const dir = waczFilename === this.primaryWacz ? this.pagesDir : join(this.pagesDir, waczFilename.replace(/\.wacz$/, ""));
    return { pagesFile: join(dir, "pages.jsonl"), extraPagesFile: join(dir, "extraPages.jsonl") };
  }

  /** Resolves once the page's line is on disk. */
  async add(entry: PageEntry, waczFilename: string): Promise<void> {
    const { pagesFile, extraPagesFile } = this.files(waczFilename);
    const log = await this.logOf(entry.seed ? pagesFile : extraPagesFile, entry.seed);
    try {
      await log.append(Buffer.from(JSON.stringify(entry) + "\n"));
    } catch (err) {
      // Ended at once (cut back to what its last good sync covered); the next page opens it again.
      if (log.failed) await log.close().catch(() => undefined);
      throw err;
    }
    this.onAdd?.(entry, waczFilename);
  }

  /** Close every list (each synced). */
  async close(): Promise<void> {
    const logs = [...this.logs.values()];
    this.logs.clear();
    for (const log of logs) await (await log.catch(() => null))?.close();
  }

  /** The list's log: opened (or, after a failure, opened again) with its header line. */
  private async logOf(file: string, isSeed: boolean): Promise<AppendLog> {
    for (;;) {
      let opening = this.logs.get(file);
      if (!opening) {
        opening = this.withHeader(AppendLog.open(file, { makeFolders: true, logName: relative(dirname(this.pagesDir), file), ...this.writing }), isSeed);
        this.logs.set(file, opening);
      }
      let log: AppendLog;
      try {
        log = await opening;
      } catch (err) {
        if (this.logs.get(file) === opening) this.logs.delete(file);
        throw err;
      }
      if (!log.failed) return log;
      if (this.logs.get(file) === opening) this.logs.set(file, this.withHeader(log.reopen(), isSeed));
    }
  }

  private async withHeader(opening: Promise<AppendLog>, isSeed: boolean): Promise<AppendLog> {
    const log = await opening;
    if (log.size > 0) return log;
    const header = isSeed ? HEADERS.pages : HEADERS.extraPages;
    await log.append(Buffer.from(JSON.stringify(this.hasText ? { ...header, hasText: true } : header) + "\n")).catch(async (err: unknown) => {
      await log.close().catch(() => undefined);
      throw err;
    });
    return log;
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
