import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

/** The codings of a Content-Encoding header, in the order applied ("identity" left out). */
function codingsOf(contentEncoding: string | undefined): string[] {
  return (contentEncoding ?? "").split(",").map((c) => c.trim().toLowerCase()).filter((c) => c && c !== "identity");
}

// Output chunks of 256 KiB, not zlib's 16 KiB: a body decoding to hundreds of MB is then a few
// thousand writes to its spool, not tens of thousands (a large share of such a body's decoding time).
const CHUNK_SIZE = 256 * 1024;

function decoderFor(coding: string): NodeJS.ReadWriteStream & Readable | null {
  return coding === "gzip" || coding === "x-gzip" ? createGunzip({ chunkSize: CHUNK_SIZE })
    : coding === "deflate" ? createInflate({ chunkSize: CHUNK_SIZE })
    : coding === "br" ? createBrotliDecompress({ chunkSize: CHUNK_SIZE })
    : null;
}

/** Whether the body is encoded (not identity) in codings decoded() undoes (gzip, deflate, br; not zstd, which Node 20 lacks). */
export function decodable(contentEncoding: string | undefined): boolean {
  const codings = codingsOf(contentEncoding);
  return codings.length > 0 && codings.every((coding) => decoderFor(coding) !== null);
}

/** The body with its Content-Encoding undone (zlib, streaming); throws on a coding it cannot undo. */
export function decoded(body: Readable, contentEncoding: string | undefined): Readable {
  let stream = body;
  // Codings are listed in the order applied: undo the last first.
  for (const coding of codingsOf(contentEncoding).reverse()) {
    const decoder = decoderFor(coding);
    if (!decoder) throw new Error(`unsupported Content-Encoding: ${coding}`);
    stream = forward(stream, decoder);
  }
  return stream;
}

/** Pipe into `next`, passing errors along (pipe alone would leave `next` waiting forever). */
export function forward<T extends NodeJS.ReadWriteStream & Readable>(from: Readable, next: T): T {
  from.on("error", (err) => next.destroy(err));
  from.pipe(next);
  return next;
}
