import { statfsSync } from "node:fs";
import type { BodyLimits } from "../fetch/bodyLimits.js";
import { logger } from "../log/logger.js";
import type { StopControl } from "./stopControl.js";

export interface StorageWatchOptions {
  /** --maxResourceSize: bytes of one body kept at most. */
  maxResourceSize: number;
  /** --sizeLimit: WARC bytes after which the crawl stops (0 = none). */
  sizeLimit: number;
  /** --diskUtilization: percent of the disk holding `dir` after which the crawl stops (0 = off). */
  diskUtilization: number;
  /** The collection's folder (its disk is the one watched). */
  dir: string;
  /** WARC bytes this process has written so far. */
  bytesWritten: () => number;
}

/** Disk use is read at most this often while bodies are written, and at least this often anyway. */
const DISK_CHECK_INTERVAL_MS = 1000;
/** ... and again after this many body bytes, however soon: a fast stream fills a disk in seconds. */
const DISK_CHECK_BYTES = 16_000_000;

/**
 * The crawl's storage limits, checked while bodies are written (not only between pages): a body that
 * would pass --sizeLimit or --diskUtilization is cut there (WARC-Truncated: length) and the crawl stops
 * gracefully, as it does when a limit is reached between pages. Also the size cap of every body.
 */
export class StorageWatch implements BodyLimits {
  readonly maxResourceSize: number;
  readonly cutShort = { length: 0, time: 0 };
  /** Body bytes received but not yet written to the WARC (what the size limit must count ahead). */
  private pending = 0;
  private sinceDiskCheck = 0;
  private lastDiskCheck = 0;
  private exceeded = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly options: StorageWatchOptions, private readonly stop: StopControl) {
    this.maxResourceSize = options.maxResourceSize;
  }

  /** Check the disk now and every second until disposed (a crawl started on a full disk stops at once). */
  start(): void {
    if (this.options.diskUtilization <= 0) return;
    this.checkDisk();
    this.timer = setInterval(() => this.checkDisk(), DISK_CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  storageAllows(bytes: number): boolean {
    if (this.exceeded) return false;
    const { sizeLimit, bytesWritten } = this.options;
    if (sizeLimit > 0 && bytesWritten() + this.pending + bytes > sizeLimit) {
      this.limitReached("size-limit", `--sizeLimit ${sizeLimit} bytes reached while writing a body`, { sizeLimit, bytesWritten: bytesWritten(), pending: this.pending });
      return false;
    }
    this.sinceDiskCheck += bytes;
    if (this.options.diskUtilization > 0 && (this.sinceDiskCheck >= DISK_CHECK_BYTES || Date.now() - this.lastDiskCheck >= DISK_CHECK_INTERVAL_MS)) {
      if (!this.checkDisk()) return false;
    }
    this.pending += bytes;
    return true;
  }

  released(bytes: number): void {
    this.pending = Math.max(0, this.pending - bytes);
  }

  /** False (and the crawl asked to stop) once the disk is used above --diskUtilization. */
  private checkDisk(): boolean {
    this.sinceDiskCheck = 0;
    this.lastDiskCheck = Date.now();
    const used = diskUsedPercent(this.options.dir);
    if (used === null || used < this.options.diskUtilization) return true;
    this.limitReached("disk-utilization", `disk use ${used.toFixed(1)}% is above --diskUtilization ${this.options.diskUtilization}%`, { dir: this.options.dir });
    return false;
  }

  private limitReached(reason: "size-limit" | "disk-utilization", message: string, details: Record<string, unknown>): void {
    if (!this.exceeded) logger.warn("crawl", `${message}: stopping the crawl`, details);
    this.exceeded = true;
    this.stop.request(reason);
  }
}

/** Percent of the disk holding `dir` in use, as df counts it (blocks reserved for root left out); null if unknown. */
export function diskUsedPercent(dir: string): number | null {
  try {
    const fs = statfsSync(dir);
    const used = fs.blocks - fs.bfree;
    const usable = used + fs.bavail;
    return usable > 0 ? (used / usable) * 100 : null;
  } catch {
    return null;
  }
}
