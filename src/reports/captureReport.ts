import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { errorMessage, logger } from "../log/logger.js";

/** One line of reports/capture.jsonl: how a page was captured in a hybrid crawl, and why. */
export interface CaptureEntry {
  url: string;
  /** Loaded in Chromium, or fetched and parsed without a browser. */
  capture: "browser" | "static";
  /** The page's template key (static/templateKey.ts); null when its document was not one a template is read from. */
  template: string | null;
  /** Why it was browsed: learning its template, verifying it, the guard's refusal, a template fallen back, a document that is not a template's (an error, a redirect, not HTML). Absent for a static capture. */
  purpose?: "learn" | "verify" | "guard" | "fallen-back" | "not-a-template";
  /** The guard's or the document's reason, in words. */
  reason?: string;
  /**
   * A verify page: what the browser fetched or linked that the static pass lacked, what the static pass would have
   * fetched that the browser did not, and what became of the template: it matched, adopted the missing URLs (the same
   * on any page), or fell back to the browser.
   */
  verify?: { missing: string[]; extra: string[]; outcome: "matched" | "adopted" | "fell-back" };
  ts: string;
}

/**
 * --captureMode hybrid: reports/capture.jsonl, one line per page crawled (a retried page's latest attempt is its last
 * line), appended as the crawl goes so a resumed crawl keeps its lines. Written after the page's records are in the
 * WARC. A report that cannot be written does not stop the crawl: said once.
 */
export class CaptureReport {
  private failed = false;

  constructor(readonly path: string) {}

  add(entry: Omit<CaptureEntry, "ts">): void {
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      appendFileSync(this.path, JSON.stringify({ ...entry, ts: new Date().toISOString() }) + "\n");
    } catch (err) {
      if (this.failed) return;
      this.failed = true;
      logger.warn("crawl", "cannot write the capture report (--captureMode hybrid): pages crawled from now on may be missing from it", { path: this.path, error: errorMessage(err) });
    }
  }
}
