import type { StaticDocument } from "../../page/staticPage.js";

/** Bounds on what a process keeps: a template's learning window sweeps the queue (each worker takes page after page). */
export interface PutBackLimits {
  /** Documents kept at most. */
  count: number;
  /** Decoded HTML kept at most, in characters: a parsed tree takes several times its HTML in heap (docs/develop/hybrid-capture.md). */
  chars: number;
  /** A document older than this is fetched again: its page waited long, and the site may have changed it. */
  maxAgeMs: number;
}

const PUT_BACK_LIMITS: PutBackLimits = { count: 64, chars: 4 * 1024 * 1024, maxAgeMs: 120_000 };

/**
 * The fetched and parsed documents of pages put back while another page learns or verifies their template, by page
 * URL: the page's retry in this process takes its document from here, so the site is asked for it once, and it is
 * not parsed again. A retry in another process fetches it anew; what is not taken in time is dropped (`drop`
 * deletes a body kept in a file).
 */
export class PutBackDocuments {
  private readonly kept = new Map<string, { doc: StaticDocument; at: number; chars: number }>();
  private chars = 0;

  constructor(
    private readonly drop: (doc: StaticDocument) => Promise<void>,
    private readonly limits: PutBackLimits = PUT_BACK_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Keep the document of a page put back (replacing one kept for it before). */
  keep(pageUrl: string, doc: StaticDocument): void {
    this.remove(pageUrl, true);
    const chars = doc.parsed?.html.length ?? 0;
    if (chars > this.limits.chars) {
      void this.drop(doc).catch(() => undefined);
      return;
    }
    this.kept.set(pageUrl, { doc, at: this.now(), chars });
    this.chars += chars;
    this.evict();
  }

  /** The page's document kept when it was put back, no older than maxAgeMs, or null; taken out either way. */
  take(pageUrl: string): StaticDocument | null {
    const entry = this.kept.get(pageUrl);
    if (!entry) return null;
    this.remove(pageUrl, false);
    if (this.now() - entry.at <= this.limits.maxAgeMs) return entry.doc;
    void this.drop(entry.doc).catch(() => undefined);
    return null;
  }

  get size(): number {
    return this.kept.size;
  }

  /** Drop every document kept (the crawl is over for this process). */
  async clear(): Promise<void> {
    const docs = [...this.kept.values()].map((entry) => entry.doc);
    this.kept.clear();
    this.chars = 0;
    await Promise.all(docs.map((doc) => this.drop(doc).catch(() => undefined)));
  }

  private remove(pageUrl: string, dropIt: boolean): void {
    const entry = this.kept.get(pageUrl);
    if (!entry) return;
    this.kept.delete(pageUrl);
    this.chars -= entry.chars;
    if (dropIt) void this.drop(entry.doc).catch(() => undefined);
  }

  /** Oldest first, past a bound or too old. */
  private evict(): void {
    const cutoff = this.now() - this.limits.maxAgeMs;
    for (const [url, entry] of this.kept) {
      if (this.kept.size <= this.limits.count && this.chars <= this.limits.chars && entry.at >= cutoff) break;
      this.remove(url, true);
    }
  }
}
