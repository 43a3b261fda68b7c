import { once } from "node:events";
import { open, type FileHandle } from "node:fs/promises";
import { createInflateRaw } from "node:zlib";

/**
 * Where the last whole gzip member of a file ends (each WARC record is one): the size the file can be cut
 * back to when nothing else says how far it is whole. Reads the file once, inflating without keeping the
 * output; a member cut off or damaged ends the scan.
 */
export async function lastWholeMemberEnd(path: string): Promise<number> {
  const handle = await open(path, "r");
  try {
    const size = (await handle.stat()).size;
    let end = 0;
    for (;;) {
      const next = await memberEnd(handle, end, size);
      if (next === null) return end;
      end = next;
    }
  } finally {
    await handle.close();
  }
}

const TRAILER_BYTES = 8; // CRC32 and ISIZE

async function memberEnd(handle: FileHandle, offset: number, size: number): Promise<number | null> {
  const head = Buffer.alloc(Math.min(64 * 1024, size - offset));
  if (head.length < 18) return null;
  await handle.read(head, 0, head.length, offset);
  const headerBytes = gzipHeaderLength(head);
  if (headerBytes === null) return null;
  const deflated = await deflateStreamLength(handle, offset + headerBytes, size);
  if (deflated === null) return null;
  const end = offset + headerBytes + deflated + TRAILER_BYTES;
  return end <= size ? end : null;
}

/** Length of a gzip member's header (RFC 1952: fixed part, then the optional fields its flags name), or null if it is none. */
function gzipHeaderLength(head: Buffer): number | null {
  if (head[0] !== 0x1f || head[1] !== 0x8b || head[2] !== 8) return null;
  const flags = head[3]!;
  let at = 10;
  if (flags & 4) at += 2 + head.readUInt16LE(at); // FEXTRA
  for (const flag of [8, 16]) {
    // FNAME, FCOMMENT: zero-terminated
    if (!(flags & flag)) continue;
    const zero = head.indexOf(0, at);
    if (zero < 0) return null;
    at = zero + 1;
  }
  if (flags & 2) at += 2; // FHCRC
  return at <= head.length ? at : null;
}

/** Bytes of the deflate stream starting at `start`, or null if it does not end whole before the file does. */
async function deflateStreamLength(handle: FileHandle, start: number, size: number): Promise<number | null> {
  const inflate = createInflateRaw();
  let ended = false;
  let failed = false;
  inflate.on("data", () => undefined);
  const finished = new Promise<void>((resolve) => {
    inflate.on("end", () => resolve(void (ended = true)));
    inflate.on("error", () => resolve(void (failed = true)));
  });
  const chunk = Buffer.alloc(256 * 1024);
  for (let at = start; at < size && !ended && !failed; ) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, size - at), at);
    if (!bytesRead) break;
    at += bytesRead;
    // Written past the stream's end, the rest is ignored: bytesWritten counts what the stream used.
    if (!inflate.write(Buffer.from(chunk.subarray(0, bytesRead)))) await Promise.race([once(inflate, "drain"), finished]);
  }
  if (!ended && !failed) inflate.end();
  await finished;
  return ended && !failed ? inflate.bytesWritten : null;
}
