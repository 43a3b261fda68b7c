import { logger } from "./logger.js";

export interface ProgressFigures {
  done: number;
  queued: number;
  pending: number;
  failed: number;
  /** Failed page attempts, retried ones included. */
  failedAttempts: number;
  bytesWritten: number;
}

export function formatCrawlProgress(figures: ProgressFigures): string {
  return (
    `pages ${figures.done} done, ${figures.pending} in progress, ${figures.queued} queued, ` +
    `${figures.failed} failed (${figures.failedAttempts} failed attempts) | ${formatBytes(figures.bytesWritten)} written`
  );
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
