import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { pipeline, Readable } from "node:stream";
import { createGzip } from "node:zlib";
import type { WARCRecord } from "warcio";

/**
 * Records whose payload is a temp file (bodies past the in-memory limit), by record. The writer serializes
 * these itself: warcio's serializer copies a payload it cannot hold into one more temp file to learn its
 * length and digests it in WebAssembly (for a 300 MiB body: 2 s of hashing and 600 MB more disk traffic).
 */
const filePayloads = new WeakMap<WARCRecord, string>();

export function setFilePayload(record: WARCRecord, path: string): void {
  filePayloads.set(record, path);
}

export function filePayloadOf(record: WARCRecord): string | undefined {
  return filePayloads.get(record);
}

// Read a megabyte at a time (not 64 KiB): a few hundred reads for a body of hundreds of MB.
const READ_SIZE = 1 << 20;
/**
 * zlib level 1 rather than warcio's default 6 for these large payloads: mostly media and archives,
 * compressed already, where 6 only costs time. Measured in Node: 300 MiB of one byte gzips in 0.42 s
 * at 1 (1.4 MB) against 1.5 s at 6 (0.3 MB); 50 MiB of pseudo-random bytes in 0.24 s against 0.63 s.
 */
const GZIP_LEVEL = 1;
const CRLF = Buffer.from("\r\n");
const CRLFCRLF = Buffer.from("\r\n\r\n");

/**
 * The record gzipped as one member, holding byte for byte what warcio's serializer writes: the payload file is read
 * twice, first for the block digest and length (they come before it, in the WARC headers), then for the
 * bytes, and never held whole. The payload digest is the record's own (the pipeline set it).
 */
export async function* gzippedFileRecord(record: WARCRecord, path: string): AsyncIterable<Uint8Array> {
  const httpHead = record.httpHeaders ? Buffer.from(record.httpHeaders.toString() + "\r\n") : Buffer.alloc(0);
  const block = createHash("sha256").update(httpHead);
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: READ_SIZE }) as AsyncIterable<Buffer>) {
    block.update(chunk);
    size += chunk.length;
  }
  const headers = record.warcHeaders.headers;
  headers.set("WARC-Block-Digest", "sha256:" + block.digest("hex"));
  headers.set("Content-Length", String(httpHead.length + size));
  const warcHead = Buffer.from(record.warcHeaders.toString());
  async function* parts(): AsyncIterable<Uint8Array> {
    yield warcHead;
    yield CRLF;
    if (httpHead.length) yield httpHead;
    yield* createReadStream(path, { highWaterMark: READ_SIZE }) as AsyncIterable<Buffer>;
    yield CRLFCRLF;
  }
  // The errors of either stream reach the loop below: pipeline destroys the gzip stream with them.
  const gzip = pipeline(Readable.from(parts()), createGzip({ level: GZIP_LEVEL }), () => undefined);
  yield* gzip as AsyncIterable<Uint8Array>;
}
