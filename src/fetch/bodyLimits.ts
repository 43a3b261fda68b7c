import { createHash, randomUUID } from "node:crypto";
import { createWriteStream, type WriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExchangeBody } from "../archive/exchange.js";
import { logger } from "../log/logger.js";

/** --maxResourceSize default: browsertrix-crawler has no such flag; large enough for any page asset, small enough for a disk. */
export const DEFAULT_MAX_RESOURCE_SIZE = 512_000_000;
/** Bodies are kept in memory up to this size; past it they spill into a temp file. */
const IN_MEMORY_LIMIT = 4_000_000;

/** How one crawl bounds what a single body may take, wherever it is fetched (browser or direct). */
export interface BodyLimits {
  /** Bytes of one body kept at most (--maxResourceSize); the rest is not read (WARC-Truncated: length). */
  maxResourceSize: number;
  /**
   * Asked before `bytes` more body bytes are written: false once the crawl's storage limits are reached
   * (--sizeLimit, --diskUtilization), which also stops the crawl; the body is kept up to there.
   */
  storageAllows(bytes: number): boolean;
  /** Bytes allowed before are now stored or dropped (no longer received-but-unwritten). */
  released(bytes: number): void;
  /** A body could not be written to its temp file (disk full...): told before the error is thrown. */
  storageFailed(err: unknown): void;
  /** Bodies cut short: at the size cap or a storage limit ("length"), or still flowing when the page ended ("time"). */
  readonly cutShort: { length: number; time: number };
}

/** No crawl around (tests, tools): only the default size cap. */
export function defaultBodyLimits(maxResourceSize = DEFAULT_MAX_RESOURCE_SIZE): BodyLimits {
  return { maxResourceSize, storageAllows: () => true, released: () => undefined, storageFailed: () => undefined, cutShort: { length: 0, time: 0 } };
}

/** A body kept short on purpose (size cap, storage limit, a stream still open at its page's end): counted and said. */
export function noteCutShort(limits: BodyLimits, url: string, reason: "length" | "time", size: number): void {
  limits.cutShort[reason] += 1;
  if (reason === "length") logger.warn("capture", "body larger than --maxResourceSize (or a storage limit reached): stored its first bytes, marked WARC-Truncated: length", { url, size, maxResourceSize: limits.maxResourceSize });
  else logger.info("capture", "response still streaming when its page ended (or its fetch's deadline came): stored what arrived, marked WARC-Truncated: time", { url, size });
}

/**
 * A body being received: in memory while small, then in a temp file; never more than the limits
 * allow. `add` returns false once nothing more is kept (the caller stops reading: "length").
 */
export class BodySpool {
  private readonly chunks: Buffer[] = [];
  private file: { path: string; stream: WriteStream } | null = null;
  size = 0;
  /** Set once bytes were refused: the body is cut at `size`. */
  overLimit = false;
  private failure: Error | null = null;
  private releasedSize = 0;
  // A body in a file gets its payload digest as its bytes come: it is not read back for it.
  private readonly hash = createHash("sha256");

  constructor(private readonly limits: BodyLimits) {}

  async add(chunk: Buffer): Promise<boolean> {
    if (this.overLimit) return false;
    const room = Math.max(0, this.limits.maxResourceSize - this.size);
    let kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (kept.length && !this.limits.storageAllows(kept.length)) kept = chunk.subarray(0, 0);
    if (kept.length) await this.write(kept);
    if (kept.length < chunk.length) this.overLimit = true;
    return !this.overLimit;
  }

  private async write(bytes: Buffer): Promise<void> {
    this.size += bytes.length;
    if (!this.file && this.size > IN_MEMORY_LIMIT) {
      const path = join(tmpdir(), `crawler-body-${process.pid}-${randomUUID()}`);
      const stream = createWriteStream(path);
      // Kept for the next write or finish() to throw: an unheard stream error would end the process.
      stream.on("error", (err) => {
        if (!this.failure) this.limits.storageFailed(err);
        this.failure ??= err;
      });
      this.file = { path, stream };
      for (const c of this.chunks.splice(0)) {
        this.hash.update(c);
        stream.write(c);
      }
    }
    if (!this.file) {
      this.chunks.push(bytes);
      return;
    }
    if (this.failure) throw this.failure;
    const stream = this.file.stream;
    this.hash.update(bytes);
    if (!stream.write(bytes)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          stream.off("drain", done);
          stream.off("error", done);
          resolve();
        };
        stream.on("drain", done);
        stream.on("error", done);
      });
    }
    if (this.failure) throw this.failure;
  }

  private release(): void {
    if (this.releasedSize === this.size) return;
    this.limits.released(this.size - this.releasedSize);
    this.releasedSize = this.size;
  }

  /** The body as received so far (the temp file closed); the spool is done. */
  async finish(): Promise<ExchangeBody> {
    this.release();
    if (!this.file) return { kind: "bytes", bytes: Buffer.concat(this.chunks) };
    const stream = this.file.stream;
    if (this.failure) throw this.failure;
    await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
    if (this.failure) throw this.failure;
    return { kind: "file", path: this.file.path, size: this.size, digest: "sha256:" + this.hash.digest("hex") };
  }

  /** Drop what was received (the temp file removed). */
  async discard(): Promise<void> {
    this.release();
    this.chunks.length = 0;
    if (!this.file) return;
    const { path, stream } = this.file;
    if (!stream.closed) {
      await new Promise<void>((resolve) => {
        stream.once("close", () => resolve());
        stream.destroy();
      });
    }
    await rm(path, { force: true });
  }
}
