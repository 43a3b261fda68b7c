import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { syncDirectory } from "./syncDirectory.js";

/** What a whole file is written from: its bytes, or chunks of them (a large file is never one string). */
export type WholeFileContent = string | Uint8Array | Iterable<string | Uint8Array> | AsyncIterable<string | Uint8Array>;

async function* chunksOf(content: WholeFileContent): AsyncIterable<Uint8Array> {
  if (typeof content === "string") yield Buffer.from(content);
  else if (content instanceof Uint8Array) yield content;
  else for await (const chunk of content) yield typeof chunk === "string" ? Buffer.from(chunk) : chunk;
}

/**
 * Write a file so that it is either wholly there or not changed at all, even across a host crash or a
 * full disk: the bytes go to a temporary file beside it (every write checked for shortness), which is
 * fsynced, renamed over the target and its folder synced. A reader never sees a file cut short.
 */
export async function writeWholeFile(path: string, content: WholeFileContent, options: { mode?: number } = {}): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString("hex")}.tmp`);
  const handle = await open(temporary, "wx", options.mode ?? 0o644);
  let renamed = false;
  try {
    for await (const chunk of chunksOf(content)) await writeFully(handle, chunk);
    await handle.sync();
    await handle.close();
    await rename(temporary, path);
    renamed = true;
    await syncDirectory(dirname(path));
  } finally {
    if (!renamed) {
      await handle.close().catch(() => undefined);
      await unlink(temporary).catch(() => undefined);
    }
  }
}

/** What a checked write needs of a file: FileHandle's positional write. */
export interface WritableFile {
  write(buffer: Uint8Array, offset: number, length: number, position?: number | null): Promise<{ bytesWritten: number }>;
}

/**
 * Write every byte of `bytes`, at `position` if given (else at the handle's position): a short write goes on
 * from where it stopped; a write that takes no bytes at all is the disk being full (ENOSPC).
 */
export async function writeFully(handle: WritableFile, bytes: Uint8Array, position?: number): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset, position === undefined ? null : position + offset);
    if (bytesWritten <= 0) throw Object.assign(new Error(`short write: the disk took ${offset} of ${bytes.length} bytes`), { code: "ENOSPC" });
    offset += bytesWritten;
  }
}
