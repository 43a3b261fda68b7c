import { pipeline, Readable } from "node:stream";
import { createGzip, gzipSync } from "node:zlib";

/** Records up to this size are gzipped on the spot: sooner done than streamed through a worker thread and back. */
const GZIP_INLINE_MAX = 256 * 1024;

/**
 * A record whose payload is in memory (a temp file's is fileRecord.ts's), as warcio serializes it uncompressed,
 * gzipped as one member by zlib at its default level. Not warcio's own gzip: it compresses through a web
 * CompressionStream, which costs about twice zlib's CPU on a page's document (1.9 ms against 1.0 for 36 KB).
 */
export async function* gzippedRecord(serialized: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  const source = serialized[Symbol.asyncIterator]();
  const head: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const next = await source.next();
    if (next.done) {
      yield gzipSync(Buffer.concat(head, size));
      return;
    }
    head.push(next.value);
    size += next.value.length;
    if (size > GZIP_INLINE_MAX) break;
  }
  async function* rest(): AsyncIterable<Uint8Array> {
    yield* head;
    for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
  }
  // The errors of either stream reach the loop below: pipeline destroys the gzip stream with them.
  yield* pipeline(Readable.from(rest()), createGzip(), () => undefined) as AsyncIterable<Uint8Array>;
}
