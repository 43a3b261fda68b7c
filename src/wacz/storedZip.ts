// A zip writer where every entry is STORED (the replay client reads WARC records by
// byte range inside the zip, which deflate would break). Each file is read once: the
// bytes flowing into the zip are hashed on the way, and the whole zip is hashed as it
// is written, so multi-GB WARCs are never held in memory or read twice. yazl switches
// to ZIP64 by itself when sizes or offsets need it.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import yazl from "yazl";

export interface ZipFileEntry {
  zipPath: string;
  sourcePath: string;
}

export interface StoredEntryInfo {
  zipPath: string;
  /** hex sha256 of the stored bytes */
  sha256: string;
  bytes: number;
}

export interface ZipBufferEntry {
  zipPath: string;
  data: Buffer;
}

export interface StoredZipResult {
  /** hex sha256 of the whole zip file */
  sha256: string;
  size: number;
  entries: StoredEntryInfo[];
}

/**
 * Write `outPath` (overwritten) with `files` stored in order, then the buffers that
 * `finish` returns once every file's hash and size are known (e.g. datapackage.json).
 * The file is fsynced before returning.
 */
export async function writeStoredZip(
  outPath: string,
  files: readonly ZipFileEntry[],
  finish: (entries: StoredEntryInfo[]) => ZipBufferEntry[] | Promise<ZipBufferEntry[]>,
): Promise<StoredZipResult> {
  // Before anything is opened: a missing file fails here with nothing to clean up.
  const sizes = await Promise.all(files.map(async (f) => (await stat(f.sourcePath)).size));

  const zip = new yazl.ZipFile();
  const mtime = new Date();

  // yazl reports stream errors on the ZipFile, not the output stream.
  const zipError = new Promise<never>((_, reject) => zip.on("error", reject));
  zipError.catch(() => undefined);

  const zipHash = createHash("sha256");
  let zipSize = 0;
  const fileOut = createWriteStream(outPath);
  const written = pipeline(
    zip.outputStream,
    new Transform({
      transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
        zipHash.update(chunk);
        zipSize += chunk.length;
        cb(null, chunk);
      },
    }),
    fileOut,
  );
  written.catch(() => undefined);

  const entryInfos = files.map((file, i) => {
    return new Promise<StoredEntryInfo>((resolve, reject) => {
      // Lazy: a file is only opened when yazl reaches it, so few descriptors are open.
      zip.addReadStreamLazy(
        file.zipPath,
        // size lets yazl fail loudly if a file changes while we package it.
        { compress: false, mtime, size: sizes[i]! },
        (cb) => {
          const hash = createHash("sha256");
          let bytes = 0;
          const src = createReadStream(file.sourcePath);
          const tap = new Transform({
            transform(chunk: Buffer, _enc: BufferEncoding, next: TransformCallback) {
              hash.update(chunk);
              bytes += chunk.length;
              next(null, chunk);
            },
            flush(next: TransformCallback) {
              resolve({ zipPath: file.zipPath, sha256: hash.digest("hex"), bytes });
              next();
            },
          });
          src.on("error", (err) => {
            reject(err);
            tap.destroy(err);
          });
          cb(null, src.pipe(tap));
        },
      );
    });
  });

  let infos: StoredEntryInfo[];
  try {
    const endedEarly = written.then(() => Promise.reject(new Error("zip output ended early")));
    endedEarly.catch(() => undefined); // it rejects after a normal finish too: not an error then
    infos = await Promise.race([Promise.all(entryInfos), zipError, endedEarly]);
    for (const extra of await finish(infos)) {
      zip.addBuffer(extra.data, extra.zipPath, { compress: false, mtime });
    }
    zip.end();
    await Promise.race([written, zipError]);
  } catch (err) {
    // Tear the pipeline down so the output file is closed before the caller removes it.
    fileOut.destroy(err instanceof Error ? err : new Error(String(err)));
    await written.catch(() => undefined);
    throw err;
  }

  // Durable before the caller renames it into place.
  const fh = await open(outPath, "r+");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }

  return { sha256: zipHash.digest("hex"), size: zipSize, entries: infos };
}
