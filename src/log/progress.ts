import { logger } from "./logger.js";
import { TerminalDisplay } from "./terminal.js";

export interface ProgressFigures {
  done: number;
  queued: number;
  pending: number;
  failed: number;
  /** Failed page attempts, retried ones included. */
  failedAttempts: number;
  bytesWritten: number;
}

const CRAWL_BAR_FORMAT =
  "{bar} {value}/{total} pages | {done} done, {pending} in progress, {queued} queued, {failed} | {bytes} | {rate} | {elapsed}";

/** The crawl's progress bar on a terminal (see TerminalDisplay); does nothing when logs go to stderr as JSON. */
export class CrawlProgressBar {
  private readonly started = Date.now();
  private display: TerminalDisplay | null;

  constructor(view = logger.currentView) {
    this.display = view instanceof TerminalDisplay ? view : null;
    this.update({ done: 0, queued: 0, pending: 0, failed: 0, failedAttempts: 0, bytesWritten: 0 });
  }

  update(figures: ProgressFigures): void {
    if (!this.display) return;
    const finished = figures.done + figures.failed;
    const seconds = (Date.now() - this.started) / 1000;
    const payload = {
      done: String(figures.done),
      pending: String(figures.pending),
      queued: String(figures.queued),
      failed: `${figures.failed} failed` + (figures.failedAttempts > figures.failed ? ` (${figures.failedAttempts} failed attempts)` : ""),
      bytes: formatBytes(figures.bytesWritten),
      rate: `${(seconds > 0 ? (finished * 60) / seconds : 0).toFixed(1)} pages/min`,
      elapsed: formatElapsed(seconds),
    };
    this.display.startBar(CRAWL_BAR_FORMAT, payload);
    this.display.updateBar(finished, finished + figures.pending + figures.queued, payload);
  }

  /** Leaves the last figures on screen; updates still under way when the crawl stopped are dropped. */
  stop(): void {
    this.display?.stopBar();
    this.display = null;
  }
}

/** The end of a crawl in a few words, for a person at the terminal. */
export function crawlSummary(stats: { crawled: number; failed: number; bytesWritten: number; elapsedSeconds: number }): string {
  return `${stats.crawled} pages, ${stats.failed} failed, ${formatBytes(stats.bytesWritten)} in ${formatElapsed(stats.elapsedSeconds)}`;
}

/** 0:07, 12:34, 1:02:03 */
export function formatElapsed(seconds: number): string {
  const s = Math.floor(seconds);
  const parts = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  const [, m, sec] = parts.map((n) => String(n).padStart(2, "0"));
  return parts[0] > 0 ? `${parts[0]}:${m}:${sec}` : `${parts[1]}:${sec}`;
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

/** A live one-line progress display on a terminal; silent when stderr is not a TTY (JSON logs only). */
export class ProgressLine {
  private lastLine = "";
  private readonly enabled = Boolean(process.stderr.isTTY);

  constructor() {
    if (this.enabled) logger.beforeStderrWrite = () => this.clear();
  }

  update(line: string): void {
    if (!this.enabled) return;
    this.lastLine = line;
    process.stderr.write(`\r\x1b[2K${this.lastLine}`);
  }

  clear(): void {
    if (this.enabled && this.lastLine) process.stderr.write("\r\x1b[2K");
  }

  stop(): void {
    this.clear();
    this.lastLine = "";
    logger.beforeStderrWrite = null;
  }
}
