// CDXJ indexing of finished .warc.gz files with warcio's CDXIndexer.
//
// We keep CDXIndexer's record pairing, SURT urlkeys, POST-to-GET keys and CDXJ
// serialisation (that is the form the replay client binary-searches) but override
// how each record is consumed, for two reasons:
//  1. Memory: upstream calls record.readFully() on every record, so a multi-GB
//     response would be held in memory. Only request bodies are needed (for POST
//     keys), so everything else is skipped and request bodies are capped.
//  2. Correctness: warcio 2.4.11 reads offset/length from the inflater state
//     right after the record content is consumed. When the source chunk boundary
//     falls inside the last few compressed bytes of a gzip member and the member's
//     decompressed size is within 4 bytes past a 64 KiB multiple, the inflater has
//     not yet seen the member end: that record's length and the NEXT record's
//     offset come out wrong. We push raw input until the member has ended before
//     indexing (see finishGzipMember).
import { createReadStream } from "node:fs";
import { basename } from "node:path";
import { CDXIndexer, type WARCParser, type WARCRecord } from "warcio";

/** POST keys use at most 4096 chars of the body, so a prefix of this size is plenty. */
export const DEFAULT_MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024;

export interface CdxjIndexOptions {
  /** fs read chunk size; only tests need to change it (to provoke chunk-boundary cases). */
  readHighWaterMark?: number;
  /** Request bodies larger than this are read only up to this prefix. */
  maxRequestBodyBytes?: number;
  /** WARC headers added to each line as fields of that name (e.g. "WARC-Record-ID"), when the record has them. */
  warcFields?: readonly string[];
}

class StreamingCDXIndexer extends CDXIndexer {
  constructor(private readonly maxRequestBodyBytes: number) {
    super({ format: "cdxj" });
  }

  /**
   * warcio indexes metadata records unless they hold WARC fields. Ours hold the server's own bytes of a
   * response stored rewritten (archive/records.ts originalResponseRecord), under the same URL and second:
   * listed, a replay could pick it instead of the response (ReplayWeb.page did, for a DASH manifest).
   */
  override filterRecord(record: WARCRecord): boolean {
    return record.warcType !== "metadata" && super.filterRecord(record);
  }

  override async *iterRecords(
    parser: WARCParser,
    filename: string,
  ): AsyncGenerator<Record<string, unknown>, void, unknown> {
    this._lastRecord = null;

    for await (const record of parser) {
      await this.consumeRecord(record);
      await finishGzipMember(parser);
      const result = this.indexRecord(record, parser, filename);
      if (result) yield result;
    }

    // The last record of a file is only emitted once the indexer knows nothing pairs with it.
    const result = this.indexRecord(null, parser, filename);
    if (result) yield result;
  }

  private async consumeRecord(record: WARCRecord): Promise<void> {
    if (record.warcType !== "request") {
      await record.skipFully();
      return;
    }
    if (record.warcContentLength <= this.maxRequestBodyBytes) {
      await record.readFully();
      return;
    }
    // Oversized upload: keep a prefix for the POST key, skip the rest unread.
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of record.reader) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= this.maxRequestBodyBytes) break;
    }
    await record.skipFully();
    record.payload = Buffer.concat(chunks, size);
  }
}

/**
 * Feed raw input into the current gzip member's inflater until the member has ended,
 * without taking any decompressed output (it stays queued for the parser). Afterwards
 * the parser's recordLength (inflater total_in) and the next record's offset are exact.
 */
async function finishGzipMember(parser: WARCParser): Promise<void> {
  const reader = parser._reader;
  const inflator = reader.inflator;
  if (!reader.compressed || !inflator) return;
  while (!inflator.ended) {
    const raw = await reader._loadNext();
    if (!raw) return; // truncated file: nothing more to learn
    reader._push(raw);
  }
}

/**
 * Yield CDXJ lines (no trailing newline) for the given WARC files in file order,
 * NOT sorted. The `filename` field is each WARC's basename, as stored under archive/.
 */
export async function* iterCdxjLines(
  paths: readonly string[],
  opts: CdxjIndexOptions = {},
): AsyncGenerator<string, void, unknown> {
  const indexer = new StreamingCDXIndexer(
    opts.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES,
  );
  // Names warcio does not know as CDX fields are looked up among the record's WARC headers.
  indexer.fields.push(...(opts.warcFields ?? []));
  for (const path of paths) {
    const stream = createReadStream(path, {
      highWaterMark: opts.readHighWaterMark ?? 128 * 1024,
    });
    try {
      for await (const result of indexer.iterIndex([
        { filename: basename(path), reader: stream },
      ])) {
        // Records without a target URI (e.g. some metadata) cannot be looked up by URL.
        if (typeof result["urlkey"] !== "string" || !result["timestamp"]) continue;
        yield indexer.serializeCDXJ(result).replace(/\n$/, "");
      }
    } finally {
      stream.destroy();
    }
  }
}

/** Sort bytewise on the UTF-8 encoding (same order as `LC_ALL=C sort`). */
export function sortCdxjLines(lines: readonly string[]): string[] {
  return lines
    .map((line) => ({ line, bytes: Buffer.from(line, "utf8") }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map((x) => x.line);
}

/** Index WARC files into bytewise-sorted CDXJ lines (no trailing newlines). */
export async function indexWarcFiles(
  paths: readonly string[],
  opts: CdxjIndexOptions = {},
): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of iterCdxjLines(paths, opts)) lines.push(line);
  return sortCdxjLines(lines);
}
