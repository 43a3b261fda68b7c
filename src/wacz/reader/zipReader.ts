// Random-access reading of WACZ files (zip archives) from a local path, a file:// URL
// or an http(s):// URL, for the dedupe-index importer and QA.
//
// Remote archives are never downloaded whole: yauzl reads the end-of-central-directory
// record and the central directory through our RandomAccessReader, and every read turns
// into an HTTP range request. Small reads (the EOCD tail, central directory records,
// local file headers, small entries such as datapackage.json) go through a read-ahead
// cache of recently fetched byte ranges, so opening N small entries costs about N round
// trips rather than 2N-3N; large entry reads stream straight from the server.
import { Readable } from "node:stream";
import yauzl from "yauzl";
import { errorMessage } from "../../log/logger.js";
import { CachingRandomAccessReader, openSource, WaczReadError, type ByteSource, type OpenWaczOptions } from "./byteSources.js";

export { WaczReadError, type OpenWaczOptions };

export interface WaczReader {
  /** The location given to openWacz (path, file:// or http(s):// URL). */
  readonly location: string;
  /** Total archive size in bytes. */
  readonly size: number;
  /** Bytes actually fetched/read from the source so far (for tests/benchmarks). */
  readonly bytesRead: number;
  /**
   * Notes about the archive that do not stop reading it, e.g. deflated entries
   * (WACZ entries should be stored: replay reads WARC records by byte range).
   */
  readonly warnings: readonly string[];
  /** File entry names in central-directory order (directory entries are left out). */
  entryNames(): string[];
  hasEntry(name: string): boolean;
  /** Whole entry in memory; refused if its uncompressed size exceeds maxBytes (default 50 MB). */
  readEntry(name: string, maxBytes?: number): Promise<Buffer>;
  /**
   * Stream an entry's (uncompressed) bytes; `range` restricts it to [start, end) of the
   * entry's data (end defaults to the entry's size).
   */
  openEntryStream(name: string, range?: EntryRange): Promise<NodeJS.ReadableStream>;
  close(): Promise<void>;
}

export interface EntryRange {
  start: number;
  end?: number;
}

export const DEFAULT_MAX_ENTRY_BYTES = 50 * 1024 * 1024;

function zipOpenError(location: string, err: unknown): WaczReadError {
  if (err instanceof WaczReadError) return err;
  const msg = errorMessage(err);
  if (/end of central directory record signature not found/i.test(msg)) {
    return new WaczReadError(`${location}: not a zip file (no end-of-central-directory record; not a zip, or truncated)`);
  }
  if (/unexpected EOF/i.test(msg)) return new WaczReadError(`${location}: truncated (${msg})`);
  return new WaczReadError(`${location}: corrupt zip (${msg})`);
}

function readAllEntries(zipfile: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    const onEntry = (entry: yauzl.Entry): void => {
      entries.push(entry);
      zipfile.readEntry();
    };
    const cleanup = (): void => {
      zipfile.removeListener("entry", onEntry);
      zipfile.removeListener("end", onEnd);
      zipfile.removeListener("error", onError);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(entries);
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    zipfile.on("entry", onEntry);
    zipfile.once("end", onEnd);
    zipfile.once("error", onError);
    zipfile.readEntry();
  });
}

class ZipWaczReader implements WaczReader {
  private readonly entries = new Map<string, yauzl.Entry>();
  private readonly names: string[] = [];
  readonly warnings: string[] = [];
  private closed = false;
  private closing: Promise<void> | null = null;

  constructor(
    readonly location: string,
    private readonly source: ByteSource,
    private readonly zipfile: yauzl.ZipFile,
    entries: readonly yauzl.Entry[],
  ) {
    for (const entry of entries) {
      const name = entry.fileName;
      if (name.endsWith("/")) continue;
      if (this.entries.has(name)) {
        this.warnings.push(`duplicate entry ${name}: the first one is used`);
        continue;
      }
      this.entries.set(name, entry);
      this.names.push(name);
      if (entry.compressionMethod === 8) {
        this.warnings.push(`${name} is deflated; WACZ entries should be stored (replay reads WARC records by byte range)`);
      }
    }
  }

  get size(): number {
    return this.source.size;
  }

  get bytesRead(): number {
    return this.source.bytesRead;
  }

  entryNames(): string[] {
    return [...this.names];
  }

  hasEntry(name: string): boolean {
    return this.entries.has(name);
  }

  private entry(name: string): yauzl.Entry {
    if (this.closed) throw new WaczReadError(`${this.location}: reader is closed`);
    const entry = this.entries.get(name);
    if (!entry) throw new WaczReadError(`${this.location}: no entry ${name}`);
    if (entry.isEncrypted()) throw new WaczReadError(`${this.location}: ${name} is encrypted`);
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
      throw new WaczReadError(`${this.location}: ${name} uses unsupported compression method ${entry.compressionMethod}`);
    }
    return entry;
  }

  async readEntry(name: string, maxBytes: number = DEFAULT_MAX_ENTRY_BYTES): Promise<Buffer> {
    const entry = this.entry(name);
    if (entry.uncompressedSize > maxBytes) {
      throw new WaczReadError(`${this.location}: ${name} is ${entry.uncompressedSize} bytes, more than the ${maxBytes}-byte limit`);
    }
    const stream = await this.openEntryStream(name);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        (stream as Readable).destroy();
        throw new WaczReadError(`${this.location}: ${name} is more than the ${maxBytes}-byte limit`);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  }

  async openEntryStream(name: string, range?: EntryRange): Promise<NodeJS.ReadableStream> {
    const entry = this.entry(name);
    const size = entry.uncompressedSize;
    const start = range?.start ?? 0;
    const end = range?.end ?? size;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start || end > size) {
      throw new WaczReadError(`${this.location}: range ${start}-${end} is outside ${name} (${size} bytes)`);
    }
    const stored = entry.compressionMethod === 0;
    let raw: Readable;
    try {
      raw = await this.zipfile.openReadStreamPromise(entry, stored && range ? { start, end } : undefined);
    } catch (err) {
      throw this.entryError(name, err);
    }
    // Deflated entries cannot be read from an offset: inflate from the start and slice.
    const skip = stored ? 0 : start;
    const limit = stored ? end - start : end;
    return Readable.from(this.guardedChunks(name, raw, skip, limit), { objectMode: false });
  }

  private entryError(name: string, err: unknown): WaczReadError {
    if (err instanceof WaczReadError) return err;
    const msg = errorMessage(err);
    if (/not enough bytes|unexpected EOF|overflows file bounds/i.test(msg)) {
      return new WaczReadError(`${this.location}: truncated (${name}: ${msg})`);
    }
    return new WaczReadError(`${this.location}: cannot read ${name} (${msg})`);
  }

  /** The raw entry stream's bytes [skip, limit), with errors named after the WACZ and entry. */
  private async *guardedChunks(name: string, raw: Readable, skip: number, limit: number): AsyncGenerator<Buffer, void, undefined> {
    let pos = 0;
    try {
      for await (const chunk of raw as AsyncIterable<Buffer>) {
        const chunkEnd = pos + chunk.length;
        if (chunkEnd > skip) {
          const part = chunk.subarray(Math.max(0, skip - pos), Math.min(chunk.length, limit - pos));
          if (part.length > 0) yield part;
        }
        pos = chunkEnd;
        if (pos >= limit) break;
      }
    } catch (err) {
      throw this.entryError(name, err);
    } finally {
      if (!raw.destroyed) raw.destroy();
    }
  }

  close(): Promise<void> {
    if (!this.closing) {
      this.closed = true;
      if (this.zipfile.isOpen) this.zipfile.close();
      this.closing = this.source.close();
    }
    return this.closing;
  }
}

/**
 * Open a WACZ for reading from a local path, a file:// URL or an http(s):// URL. The
 * whole central directory is read here; entries are read on demand. Remote archives
 * are read with range requests only (the server must answer 206).
 */
export async function openWacz(location: string, options: OpenWaczOptions = {}): Promise<WaczReader> {
  const source = await openSource(location, options);
  let zipfile: yauzl.ZipFile | null = null;
  try {
    const reader = new CachingRandomAccessReader(source);
    zipfile = await yauzl.fromRandomAccessReaderPromise(reader, source.size, {
      lazyEntries: true,
      autoClose: false,
      validateEntrySizes: true,
    });
    const entries = await readAllEntries(zipfile);
    // Later reader errors (e.g. while closing) are reported through the calls that
    // caused them; without a listener an "error" event would be thrown.
    zipfile.on("error", () => undefined);
    return new ZipWaczReader(location, source, zipfile, entries);
  } catch (err) {
    if (zipfile) zipfile.on("error", () => undefined);
    await source.close().catch(() => undefined);
    throw zipOpenError(location, err);
  }
}
