// Reading the CDXJ index of a WACZ, streaming, for the dedupe-index importer.
//
// Plain indexes (indexes/*.cdxj) are streamed line by line. ZipNum indexes
// (indexes/<name>.idx + the .cdx.gz it names) are read by streaming the .idx and, for
// each block line, reading that block's bytes by offset/length from the .cdx.gz entry
// and gunzipping it on its own. Consecutive blocks are read from one sequential stream
// of the entry (one range request over HTTP), so memory holds one block at a time.
import { createHash } from "node:crypto";
import { posix } from "node:path";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createGunzip, gunzipSync } from "node:zlib";

import { cdxjLineParts, cdxjRecordOf, previewLine as preview, scanCdxjLine, WaczIndexError, type CdxjRecord } from "../cdxjLine.js";
import { WaczReadError, type WaczReader } from "./zipReader.js";

export { WaczIndexError, type CdxjRecord };


/** A line longer than this is not a CDXJ line (and must not grow memory without bound). */
const MAX_LINE_CHARS = 16 * 1024 * 1024;
/** Bytes of a read chunk decoded to text at once. */
const DECODE_BYTES = 32 * 1024;
/** A forward gap in a ZipNum .cdx.gz larger than this is skipped with a new range read. */
const MAX_SKIP_BYTES = 256 * 1024;

function destroyStream(stream: NodeJS.ReadableStream): void {
  const s = stream as Partial<Readable>;
  if (typeof s.destroy === "function" && !s.destroyed) s.destroy();
}

/**
 * Lines of a byte stream (UTF-8), without "\n" / "\r\n", a chunk's worth at a time (one await per
 * chunk, not per line); a final unterminated line is yielded too.
 */
async function* streamLines(chunks: AsyncIterable<Buffer | string>, tooLong: () => Error): AsyncGenerator<string[], void, undefined> {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  for await (const whole of chunks) for (let at = 0; at < whole.length; at += DECODE_BYTES) {
    // Decoded a slice at a time: strings this size die young, where a whole read chunk's text would
    // be a large object that only a full GC frees.
    const chunk = whole.length <= DECODE_BYTES ? whole : whole.slice(at, at + DECODE_BYTES);
    pending += typeof chunk === "string" ? chunk : decoder.write(chunk);
    const lines: string[] = [];
    let start = 0;
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n", start)) {
      lines.push(stripCr(pending.slice(start, nl)));
      start = nl + 1;
    }
    pending = pending.slice(start);
    if (pending.length > MAX_LINE_CHARS) throw tooLong();
    if (lines.length) yield lines;
  }
  pending += decoder.end();
  if (pending !== "") yield [stripCr(pending)];
}

function stripCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}

/**
 * Sequential reads of byte ranges of one zip entry. Consecutive ranges come from one
 * open stream; a backward jump or a big gap opens a new stream at the wanted offset.
 */
class EntryCursor {
  private stream: NodeJS.ReadableStream | null = null;
  private iter: AsyncIterator<Buffer | string> | null = null;
  private leftover: Buffer | null = null;
  private pos = 0;

  constructor(
    private readonly reader: WaczReader,
    readonly name: string,
  ) {}

  /** Up to `length` bytes at `offset`: fewer only when the entry ends first. */
  async read(offset: number, length: number): Promise<Buffer> {
    if (!this.iter || offset < this.pos || offset - this.pos > MAX_SKIP_BYTES) await this.reopen(offset);
    if (offset > this.pos) {
      const skipped = await this.take(offset - this.pos, false);
      if (skipped.length < offset - this.pos) return Buffer.alloc(0);
    }
    return this.take(length, true);
  }

  private async reopen(offset: number): Promise<void> {
    this.close();
    this.stream = await this.reader.openEntryStream(this.name, { start: offset });
    this.iter = (this.stream as AsyncIterable<Buffer | string>)[Symbol.asyncIterator]();
    this.pos = offset;
  }

  private async take(n: number, keep: boolean): Promise<Buffer> {
    const parts: Buffer[] = [];
    let got = 0;
    while (got < n) {
      let chunk = this.leftover;
      this.leftover = null;
      if (!chunk) {
        const r = await this.iter!.next();
        if (r.done) break;
        chunk = typeof r.value === "string" ? Buffer.from(r.value) : r.value;
      }
      const need = n - got;
      if (chunk.length > need) {
        this.leftover = chunk.subarray(need);
        chunk = chunk.subarray(0, need);
      }
      if (keep) parts.push(chunk);
      got += chunk.length;
      this.pos += chunk.length;
    }
    return keep ? Buffer.concat(parts, got) : Buffer.alloc(got);
  }

  close(): void {
    if (this.stream) destroyStream(this.stream);
    this.stream = null;
    this.iter = null;
    this.leftover = null;
  }
}

interface IdxBlock {
  offset: number;
  length: number;
  digest?: string;
  filename?: string;
}

function toNonNegativeInt(value: unknown): number | null {
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** One .idx block line: `<urlkey> <ts> {"offset","length","digest","filename"}`, or the classic tab-separated form. */
function parseIdxLine(line: string): IdxBlock | null {
  if (line.includes("\t")) {
    // pywb's classic ZipNum: `<key>\t<part file>\t<offset>\t<length>[\t...]`
    const [, filename, offset, length] = line.split("\t");
    const o = toNonNegativeInt(offset);
    const l = toNonNegativeInt(length);
    if (o === null || l === null || !filename) return null;
    return { offset: o, length: l, filename };
  }
  let json: Record<string, unknown>;
  try {
    json = cdxjLineParts(line).json;
  } catch {
    return null;
  }
  const offset = toNonNegativeInt(json["offset"]);
  const length = toNonNegativeInt(json["length"]);
  if (offset === null || length === null) return null;
  const block: IdxBlock = { offset, length };
  if (typeof json["digest"] === "string") block.digest = json["digest"];
  if (typeof json["filename"] === "string") block.filename = json["filename"];
  return block;
}

function isUnder(name: string, suffix: string): boolean {
  return name.startsWith("indexes/") && name.endsWith(suffix);
}

/**
 * Yield every CDXJ line of the WACZ's index, in order (no trailing newline; blank lines
 * and `!`-metadata lines are skipped): all indexes/*.cdxj files, then every ZipNum index
 * (indexes/*.idx and the .cdx.gz each names). A .cdx.gz that no .idx names is read
 * whole (gunzipped as a stream) only when the WACZ has neither .cdxj nor .idx files.
 * Every line is checked as a CDXJ record (src/wacz/cdxjLine.ts). Memory stays flat: one gzip block (ZipNum)
 * or one stream chunk (plain) at a time.
 */
async function* iterWaczCdxjEntries(reader: WaczReader): AsyncGenerator<CdxjChunk> {
  const loc = reader.location;
  const indexNames = reader.entryNames().filter((n) => n.startsWith("indexes/"));
  if (indexNames.length === 0) throw new WaczIndexError(`${loc}: has no CDXJ index (no indexes/ entry)`);
  const cdxjNames = indexNames.filter((n) => isUnder(n, ".cdxj")).sort();
  const idxNames = indexNames.filter((n) => isUnder(n, ".idx")).sort();
  const gzNames = indexNames.filter((n) => isUnder(n, ".cdx.gz") || isUnder(n, ".cdxj.gz")).sort();
  if (cdxjNames.length === 0 && idxNames.length === 0 && gzNames.length === 0) {
    throw new WaczIndexError(`${loc}: has no CDXJ index (indexes/ holds only ${indexNames.join(", ")})`);
  }

  for (const name of cdxjNames) yield* plainCdxjLines(reader, name);
  for (const name of idxNames) yield* zipNumLines(reader, name);
  if (cdxjNames.length === 0 && idxNames.length === 0) {
    for (const name of gzNames) yield* gzipCdxjLines(reader, name);
  }
}

/** Every CDXJ line of the WACZ's index, in order (see iterWaczCdxjEntries). */
export async function* iterWaczCdxj(reader: WaczReader): AsyncGenerator<string> {
  for await (const chunk of iterWaczCdxjEntries(reader)) yield* chunk.lines;
}

/** The WACZ's index as parsed records, in order, a block or chunk at a time: what the importer reads. */
export async function* iterWaczCdxjRecordBatches(reader: WaczReader): AsyncGenerator<CdxjRecord[]> {
  for await (const chunk of iterWaczCdxjEntries(reader)) yield chunk.records;
}

/**
 * Lines of the index and their records (each line is parsed once), as two parallel arrays: no
 * object per line beyond the record. Records of lines in the common compact form carry the urlkey,
 * timestamp and the fields the importer reads (url, mime, status, digest, length: see scanCdxjLine in src/wacz/cdxjLine.ts);
 * lines in any other form are parsed whole and carry every field.
 */
interface CdxjChunk {
  lines: string[];
  records: CdxjRecord[];
}

function newChunk(): CdxjChunk {
  return { lines: [], records: [] };
}

function addCheckedLine(chunk: CdxjChunk, loc: string, line: string, lineNo: number, where: () => string): void {
  const result = scanCdxjLine(line) ?? cdxjRecordOf(line);
  if (typeof result === "string") {
    throw new WaczIndexError(`${loc}: malformed CDXJ line ${lineNo} in ${where()} (${result}): ${preview(line)}`);
  }
  chunk.lines.push(line);
  chunk.records.push(result);
}

function isRecordLine(line: string): boolean {
  return line !== "" && !line.startsWith("!");
}

/** The checked records of a stream of CDXJ text, a chunk at a time. */
async function* checkedChunks(reader: WaczReader, name: string, stream: AsyncIterable<Buffer>): AsyncGenerator<CdxjChunk, void, undefined> {
  let lineNo = 0;
  const lines = streamLines(stream, () => new WaczIndexError(`${reader.location}: ${name} has a line over ${MAX_LINE_CHARS} characters`));
  const where = () => name;
  for await (const text of lines) {
    const chunk = newChunk();
    for (const line of text) {
      lineNo++;
      if (isRecordLine(line)) addCheckedLine(chunk, reader.location, line, lineNo, where);
    }
    if (chunk.lines.length) yield chunk;
  }
}

async function* plainCdxjLines(reader: WaczReader, name: string): AsyncGenerator<CdxjChunk, void, undefined> {
  const stream = await reader.openEntryStream(name);
  try {
    yield* checkedChunks(reader, name, stream as AsyncIterable<Buffer>);
  } finally {
    destroyStream(stream);
  }
}

async function* gzipCdxjLines(reader: WaczReader, name: string): AsyncGenerator<CdxjChunk, void, undefined> {
  const stream = await reader.openEntryStream(name);
  const gunzipStream = createGunzip();
  stream.on("error", (err: Error) => gunzipStream.destroy(err));
  stream.pipe(gunzipStream);
  try {
    yield* checkedChunks(reader, name, gunzipStream);
  } catch (err) {
    if (err instanceof WaczIndexError || err instanceof WaczReadError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    throw new WaczIndexError(`${reader.location}: ${posix.basename(name)} is truncated or corrupt (${msg})`);
  } finally {
    gunzipStream.destroy();
    destroyStream(stream);
  }
}

async function* zipNumLines(reader: WaczReader, idxName: string): AsyncGenerator<CdxjChunk, void, undefined> {
  const loc = reader.location;
  const dir = posix.dirname(idxName);
  // The default data file: the meta line's filename, else <idx name>.cdx.gz.
  let defaultFilename = posix.basename(idxName).replace(/\.idx$/, ".cdx.gz");
  const checkedEntries = new Set<string>();
  const cursors = new Map<string, EntryCursor>();
  const blockNos = new Map<string, number>();
  const lineNos = new Map<string, number>();

  const entryFor = (filename: string): string => {
    const entryName = posix.join(dir, filename);
    if (!checkedEntries.has(entryName)) {
      if (!reader.hasEntry(entryName)) {
        throw new WaczIndexError(`${loc}: ZipNum index ${idxName} names ${filename}, but the WACZ has no ${entryName}`);
      }
      checkedEntries.add(entryName);
    }
    return entryName;
  };

  const idxStream = await reader.openEntryStream(idxName);
  let idxLineNo = 0;
  try {
    const idxLines = streamLines(idxStream as AsyncIterable<Buffer>, () => new WaczIndexError(`${loc}: ${idxName} has a line over ${MAX_LINE_CHARS} characters`));
    for await (const idxChunk of idxLines) for (const idxLine of idxChunk) {
      idxLineNo++;
      if (idxLine === "") continue;
      if (idxLine.startsWith("!")) {
        const meta = /^!meta\s+\S+\s+(\{.*\})\s*$/.exec(idxLine);
        if (meta) {
          try {
            const json: unknown = JSON.parse(meta[1]!);
            const filename = (json as Record<string, unknown> | null)?.["filename"];
            if (typeof filename === "string" && filename !== "") {
              defaultFilename = filename;
              entryFor(filename);
            }
          } catch (err) {
            if (err instanceof WaczIndexError) throw err;
            throw new WaczIndexError(`${loc}: malformed ZipNum index line ${idxLineNo} in ${idxName}: ${preview(idxLine)}`);
          }
        }
        continue;
      }
      const block = parseIdxLine(idxLine);
      if (!block) throw new WaczIndexError(`${loc}: malformed ZipNum index line ${idxLineNo} in ${idxName}: ${preview(idxLine)}`);
      const filename = block.filename ?? defaultFilename;
      const entryName = entryFor(filename);
      const gzLabel = posix.basename(entryName);
      const blockNo = (blockNos.get(entryName) ?? 0) + 1;
      blockNos.set(entryName, blockNo);
      let cursor = cursors.get(entryName);
      if (!cursor) {
        cursor = new EntryCursor(reader, entryName);
        cursors.set(entryName, cursor);
      }
      const corrupt = (why: string): WaczIndexError =>
        new WaczIndexError(`${loc}: ${gzLabel} is truncated or corrupt at block ${blockNo} (offset ${block.offset}, length ${block.length}: ${why})`);

      let compressed: Buffer;
      try {
        compressed = await cursor.read(block.offset, block.length);
      } catch (err) {
        // A range past the end of the entry is refused by the reader: the data file is short.
        if (err instanceof Error && /is outside/.test(err.message)) throw corrupt("the entry ends before the block");
        throw err;
      }
      if (compressed.length < block.length) throw corrupt(`the entry ends after ${compressed.length} bytes of the block`);
      if (block.digest?.startsWith("sha256:")) {
        const actual = "sha256:" + createHash("sha256").update(compressed).digest("hex");
        if (actual !== block.digest.toLowerCase()) throw corrupt("digest mismatch");
      }
      let text: string;
      try {
        // Blocks are small (256 lines): inflating inline beats a thread-pool round trip per block.
        text = gunzipSync(compressed).toString("utf8");
      } catch (err) {
        throw corrupt(err instanceof Error ? err.message : String(err));
      }
      let lineNo = lineNos.get(entryName) ?? 0;
      const lines = text.split("\n");
      if (lines[lines.length - 1] === "") lines.pop();
      const chunk = newChunk();
      const where = () => `${entryName} (block ${blockNo})`;
      for (const raw of lines) {
        lineNo++;
        const line = stripCr(raw);
        if (isRecordLine(line)) addCheckedLine(chunk, loc, line, lineNo, where);
      }
      lineNos.set(entryName, lineNo);
      if (chunk.lines.length) yield chunk;
    }
  } finally {
    destroyStream(idxStream);
    for (const cursor of cursors.values()) cursor.close();
  }
}
