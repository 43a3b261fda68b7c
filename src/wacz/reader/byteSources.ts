// Byte sources for random-access zip reading: exact byte ranges from a local file or an HTTP server
// (range requests only), and a yauzl RandomAccessReader with a read-ahead cache on top of them.
import { open as openFile, type FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
// undici is loaded by the first HTTP source only: a local import does not pay its start-up time.
import type { Agent, Dispatcher } from "undici";
import type { Undici } from "./httpClient.js";
import yauzl from "yauzl";
import { errorMessage } from "../../log/logger.js";
import { VERSION } from "../../version.js";

export class WaczReadError extends Error {
  override name = "WaczReadError";
}

export interface OpenWaczOptions {
  /** Timeout for connecting, for response headers and between body chunks; default 30 s. */
  fetchTimeoutMs?: number;
  userAgent?: string;
}

const DEFAULT_FETCH_TIMEOUT_MS = 30_000;
/** Minimum size of a cached (small) read: local headers and small entries share a fetch. */
const READ_AHEAD_BYTES = 64 * 1024;
/** Bound on the bytes kept in the read-ahead cache. */
const MAX_CACHE_BYTES = 4 * 1024 * 1024;
const FILE_CHUNK_BYTES = 256 * 1024;
const MAX_REDIRECTIONS = 5;

// ---------------------------------------------------------------------------
// Byte sources: exact byte ranges from a local file or an HTTP server.

export interface ByteSource {
  readonly size: number;
  readonly bytesRead: number;
  /** Exactly the bytes [start, end); throws WaczReadError when fewer are available. */
  readRange(start: number, end: number): Promise<Buffer>;
  /** Exactly the bytes [start, end), in chunks. */
  streamRange(start: number, end: number): AsyncGenerator<Buffer, void, undefined>;
  close(): Promise<void>;
}

class FileSource implements ByteSource {
  bytesRead = 0;
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly location: string,
    private readonly fh: FileHandle,
    readonly size: number,
  ) {}

  static async open(location: string, path: string): Promise<FileSource> {
    let fh: FileHandle;
    try {
      fh = await openFile(path, "r");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") throw new WaczReadError(`${location}: file not found`);
      throw new WaczReadError(`${location}: cannot open file (${code ?? errorMessage(err)})`);
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new WaczReadError(`${location}: not a regular file`);
      return new FileSource(location, fh, st.size);
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  }

  private async readInto(buf: Buffer, position: number): Promise<number> {
    let filled = 0;
    while (filled < buf.length) {
      const { bytesRead } = await this.fh.read(buf, filled, buf.length - filled, position + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
      this.bytesRead += bytesRead;
    }
    return filled;
  }

  async readRange(start: number, end: number): Promise<Buffer> {
    const buf = Buffer.allocUnsafe(end - start);
    const n = await this.readInto(buf, start);
    if (n < buf.length) {
      throw new WaczReadError(`${this.location}: truncated (file ends at byte ${start + n}, expected ${end})`);
    }
    return buf;
  }

  async *streamRange(start: number, end: number): AsyncGenerator<Buffer, void, undefined> {
    let pos = start;
    while (pos < end) {
      const chunk = await this.readRange(pos, Math.min(end, pos + FILE_CHUNK_BYTES));
      pos += chunk.length;
      yield chunk;
    }
  }

  close(): Promise<void> {
    this.closing ??= this.fh.close();
    return this.closing;
  }
}

/** "bytes a-b/total" -> numbers; total is null for "*". */
function parseContentRange(value: string | undefined): { start: number; end: number; total: number | null } | null {
  const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(value ?? "");
  if (!m) return null;
  return { start: Number(m[1]), end: Number(m[2]), total: m[3] === "*" ? null : Number(m[3]) };
}

/** Drop a response body unread; undici reports the abort as an "error" that nobody needs. */
function destroyBody(body: Dispatcher.ResponseData["body"]): void {
  body.on("error", () => undefined);
  if (!body.destroyed) body.destroy();
}

function firstHeaderValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

class HttpSource implements ByteSource {
  bytesRead = 0;
  size = 0;
  private closed = false;
  private closing: Promise<void> | null = null;
  private readonly agent: Agent;
  private readonly dispatcher: Dispatcher;
  private readonly timeoutMs: number;
  private readonly userAgent: string;

  private constructor(
    private readonly url: string,
    options: OpenWaczOptions,
    private readonly undici: Undici,
  ) {
    this.timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.userAgent = options.userAgent ?? `warc-crawler/${VERSION} (wacz-reader)`;
    this.agent = new undici.Agent({ connect: { timeout: this.timeoutMs } });
    this.dispatcher = this.agent.compose(undici.interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }));
  }

  static async open(url: string, options: OpenWaczOptions): Promise<HttpSource> {
    const source = new HttpSource(url, options, (await import("./httpClient.js")).undici);
    try {
      source.size = await source.discoverSize();
      return source;
    } catch (err) {
      await source.close();
      throw err;
    }
  }

  private async send(method: "HEAD" | "GET", range?: string): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = {
      "user-agent": this.userAgent,
      // A length or range of an encoded body would not be the archive's bytes.
      "accept-encoding": "identity",
    };
    if (range) headers["range"] = range;
    try {
      return await this.undici.request(this.url, {
        method,
        headers,
        dispatcher: this.dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (err) {
      throw this.requestError(err);
    }
  }

  private requestError(err: unknown): WaczReadError {
    if (err instanceof WaczReadError) return err;
    const code = (err as { code?: string }).code ?? "";
    if (/TIMEOUT/i.test(code)) return new WaczReadError(`${this.url}: request timed out (${errorMessage(err)})`);
    return new WaczReadError(`${this.url}: request failed (${errorMessage(err)})`);
  }

  private statusError(status: number): WaczReadError {
    if (status === 200) return new WaczReadError(`${this.url}: server does not support range requests (HTTP 200 to a Range request)`);
    if (status === 416) return new WaczReadError(`${this.url}: truncated (HTTP 416: range beyond the end of the file)`);
    return new WaczReadError(`HTTP ${status} for ${this.url}`);
  }

  /** HEAD for Content-Length; when it gives none, a bytes=0-0 GET's Content-Range total. */
  private async discoverSize(): Promise<number> {
    const head = await this.send("HEAD");
    await head.body.dump().catch(() => undefined);
    if (head.statusCode >= 200 && head.statusCode < 300) {
      const length = firstHeaderValue(head.headers, "content-length");
      const encoding = firstHeaderValue(head.headers, "content-encoding");
      if (length !== undefined && /^\d+$/.test(length.trim()) && (!encoding || encoding === "identity")) {
        return Number(length);
      }
    } else if (head.statusCode !== 405 && head.statusCode !== 501) {
      // Servers that do not implement HEAD answer 405/501: try a GET then. Anything else is final.
      throw this.statusError(head.statusCode);
    }
    const res = await this.send("GET", "bytes=0-0");
    if (res.statusCode !== 206) {
      destroyBody(res.body);
      throw this.statusError(res.statusCode);
    }
    const cr = parseContentRange(firstHeaderValue(res.headers, "content-range"));
    for await (const chunk of res.body as AsyncIterable<Buffer>) this.bytesRead += chunk.length;
    if (!cr || cr.total === null) {
      throw new WaczReadError(`${this.url}: server gave no archive size (no Content-Length, Content-Range ${JSON.stringify(firstHeaderValue(res.headers, "content-range") ?? null)})`);
    }
    return cr.total;
  }

  /** A verified 206 response for [start, end). */
  private async rangeResponse(start: number, end: number): Promise<Dispatcher.ResponseData> {
    const res = await this.send("GET", `bytes=${start}-${end - 1}`);
    if (res.statusCode !== 206) {
      // Never drain a 200: that would download the whole archive.
      destroyBody(res.body);
      throw this.statusError(res.statusCode);
    }
    const cr = parseContentRange(firstHeaderValue(res.headers, "content-range"));
    let problem: string | null = null;
    if (!cr) problem = "206 response without a valid Content-Range";
    else if (cr.start !== start) problem = `asked for bytes from ${start}, got ${cr.start}`;
    else if (cr.total !== null && cr.total !== this.size) problem = `archive changed on the server (size ${cr.total}, was ${this.size})`;
    else if (cr.end < end - 1) problem = `truncated (server has bytes up to ${cr.end}, expected ${end - 1})`;
    if (problem) {
      destroyBody(res.body);
      throw new WaczReadError(`${this.url}: ${problem}`);
    }
    return res;
  }

  async *streamRange(start: number, end: number): AsyncGenerator<Buffer, void, undefined> {
    if (this.closed) throw new WaczReadError(`${this.url}: reader is closed`);
    const res = await this.rangeResponse(start, end);
    const want = end - start;
    let got = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        this.bytesRead += chunk.length;
        if (got + chunk.length > want) {
          const part = chunk.subarray(0, want - got);
          got = want;
          if (part.length > 0) yield part;
          break;
        }
        got += chunk.length;
        yield chunk;
      }
    } catch (err) {
      throw this.requestError(err);
    } finally {
      if (got < want) destroyBody(res.body);
    }
    if (got < want) throw new WaczReadError(`${this.url}: truncated (response ended after ${got} of ${want} bytes at ${start})`);
  }

  async readRange(start: number, end: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.streamRange(start, end)) chunks.push(chunk);
    return Buffer.concat(chunks, end - start);
  }

  close(): Promise<void> {
    this.closed = true;
    // destroy, not close: a stream abandoned mid-body must not keep close() waiting.
    this.closing ??= this.agent.destroy().catch(() => undefined);
    return this.closing;
  }
}

// ---------------------------------------------------------------------------
// yauzl RandomAccessReader with a small read-ahead cache.

interface Segment {
  start: number;
  data: Buffer;
}

export class CachingRandomAccessReader extends yauzl.RandomAccessReader {
  private segments: Segment[] = [];
  private cachedBytes = 0;

  constructor(private readonly source: ByteSource) {
    super();
  }

  /** The cached bytes from `pos` on (up to `end`), from the segment holding `pos`. */
  private cachedFrom(pos: number, end: number): Buffer | null {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const s = this.segments[i]!;
      const segEnd = s.start + s.data.length;
      if (s.start <= pos && pos < segEnd) return s.data.subarray(pos - s.start, Math.min(end, segEnd) - s.start);
    }
    return null;
  }

  private remember(start: number, data: Buffer): void {
    if (data.length === 0 || data.length > MAX_CACHE_BYTES) return;
    this.segments.push({ start, data });
    this.cachedBytes += data.length;
    while (this.cachedBytes > MAX_CACHE_BYTES && this.segments.length > 1) {
      this.cachedBytes -= this.segments.shift()!.data.length;
    }
  }

  /** [pos, pos+length) through the cache; a miss fetches at least READ_AHEAD_BYTES. */
  private async readCached(pos: number, length: number): Promise<Buffer> {
    const end = pos + length;
    const parts: Buffer[] = [];
    let at = pos;
    while (at < end) {
      const hit = this.cachedFrom(at, end);
      if (hit) {
        parts.push(hit);
        at += hit.length;
        continue;
      }
      const fetchEnd = Math.min(this.source.size, Math.max(end, at + READ_AHEAD_BYTES));
      if (fetchEnd <= at) break; // beyond the end: a short read, reported by the caller
      const data = await this.source.readRange(at, fetchEnd);
      this.remember(at, data);
      const used = data.subarray(0, Math.min(end, fetchEnd) - at);
      parts.push(used);
      at += used.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  private async *rangeChunks(start: number, end: number): AsyncGenerator<Buffer, void, undefined> {
    let pos = start;
    const hit = this.cachedFrom(pos, end);
    if (hit) {
      yield hit;
      pos += hit.length;
    }
    if (pos >= end) return;
    if (end - pos <= READ_AHEAD_BYTES) {
      yield await this.readCached(pos, end - pos);
      return;
    }
    yield* this.source.streamRange(pos, end);
  }

  override _readStreamForRange(start: number, end: number): Readable {
    return Readable.from(this.rangeChunks(start, end), { objectMode: false });
  }

  override read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
    callback: (err: Error | null, bytesRead?: number) => void,
  ): void {
    this.readCached(position, length).then(
      (data) => {
        data.copy(buffer, offset);
        callback(null, data.length);
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
    );
  }

  override close(callback: (err: Error | null) => void): void {
    this.source.close().then(
      () => callback(null),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
    );
  }
}

// ---------------------------------------------------------------------------
// The reader.

export async function openSource(location: string, options: OpenWaczOptions): Promise<ByteSource> {
  if (/^https?:\/\//i.test(location)) return HttpSource.open(location, options);
  if (/^file:/i.test(location)) {
    let path: string;
    try {
      path = fileURLToPath(location);
    } catch (err) {
      throw new WaczReadError(`${location}: invalid file URL (${errorMessage(err)})`);
    }
    return FileSource.open(location, path);
  }
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(location)) {
    throw new WaczReadError(`${location}: unsupported URL scheme (use a path, file://, http:// or https://)`);
  }
  return FileSource.open(location, location);
}
