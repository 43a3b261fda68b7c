import { statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import type { BodyLimits } from "../fetch/bodyLimits.js";
import { logger } from "../log/logger.js";
import { isStorageError, storageErrorMessage } from "../util/storageErrors.js";
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

/** Disk use is read at least this often while the crawl runs. */
const DISK_CHECK_INTERVAL_MS = 1000;
/**
 * ... and while bodies are written, again after a quarter of the room left below the limit (within
 * these bounds), however soon: a fast stream fills a small disk in well under a second.
 */
const DISK_CHECK_MIN_BYTES = 64 * 1024;
const DISK_CHECK_MAX_BYTES = 16_000_000;

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
  private checkDiskAfter = 0;
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
    if (this.options.diskUtilization > 0 && (this.sinceDiskCheck >= this.checkDiskAfter || Date.now() - this.lastDiskCheck >= DISK_CHECK_INTERVAL_MS)) {
      if (!this.checkDisk()) return false;
    }
    this.pending += bytes;
    return true;
  }

  /** A body could not be written to the temp folder (disk full...): nothing can be captured whole, stop now. */
  storageFailed(err: unknown): void {
    if (isStorageError(err)) this.stop.fatal(`cannot write response bodies to ${tmpdir()}: ${storageErrorMessage(err)}`, err);
  }

  released(bytes: number): void {
    this.pending = Math.max(0, this.pending - bytes);
  }

  /** False (and the crawl asked to stop) once the disk is used above --diskUtilization. */
  private checkDisk(): boolean {
    this.sinceDiskCheck = 0;
    this.lastDiskCheck = Date.now();
    const disk = diskUse(this.options.dir);
    if (disk === null) return true;
    const used = (disk.used / disk.usable) * 100;
    const room = (disk.usable * this.options.diskUtilization) / 100 - disk.used;
    this.checkDiskAfter = Math.min(DISK_CHECK_MAX_BYTES, Math.max(DISK_CHECK_MIN_BYTES, room / 4));
    if (used < this.options.diskUtilization) return true;
    this.limitReached("disk-utilization", `disk use ${used.toFixed(1)}% is above --diskUtilization ${this.options.diskUtilization}%`, { dir: this.options.dir });
    return false;
  }

  private limitReached(reason: "size-limit" | "disk-utilization", message: string, details: Record<string, unknown>): void {
    if (!this.exceeded) logger.warn("crawl", `${message}: stopping the crawl`, details);
    this.exceeded = true;
    this.stop.request(reason);
  }
}

/** Bytes in use on the disk holding `dir` and bytes usable, as df counts them (blocks reserved for root left out); null if unknown. */
function diskUse(dir: string): { used: number; usable: number } | null {
  try {
    const fs = statfsSync(dir);
    const used = (fs.blocks - fs.bfree) * fs.bsize;
    const usable = used + fs.bavail * fs.bsize;
    return usable > 0 ? { used, usable } : null;
  } catch {
    return null;
  }
}
