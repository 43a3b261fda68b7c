// Writing the CDXJ index into a WACZ's indexes/ folder: a plain index.cdxj for small
// crawls, a ZipNum index (index.cdx.gz + index.idx) for large ones. The replay client
// loads a plain index whole, but with ZipNum it binary-searches the small .idx and
// fetches only the gzip blocks it needs; a lone index.cdx.gz without .idx is ignored.
import { createHash } from "node:crypto";
import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzip } from "node:zlib";

import { cdxjLineParts } from "./cdxjLine.js";
import type { SortedLines } from "./externalSort.js";

const gzipAsync = promisify(gzip);

/** webrecorder's threshold: a CDXJ total below this many bytes is stored plain. */
export const DEFAULT_ZIPNUM_THRESHOLD_BYTES = 50_000;
export const ZIPNUM_LINES_PER_BLOCK = 256;
export const ZIPNUM_CDX_FILENAME = "index.cdx.gz";
export const ZIPNUM_IDX_FILENAME = "index.idx";
export const PLAIN_CDXJ_FILENAME = "index.cdxj";
export const ZIPNUM_META_LINE = `!meta 0 ${JSON.stringify({
  format: "cdxj-gzip-1.0",
  filename: ZIPNUM_CDX_FILENAME,
})}`;

export interface ZipNumBlock {
  urlkey: string;
  timestamp: string;
  offset: number;
  length: number;
  /** sha256:<hex> of the compressed block bytes */
  digest: string;
}

export interface IndexEntry {
  zipPath: string;
  sourcePath: string;
}

/** Size in bytes of the lines as written to index.cdxj (one "\n" after each). */
export function cdxjByteSize(lines: readonly string[]): number {
  let total = 0;
  for (const line of lines) total += Buffer.byteLength(line, "utf8") + 1;
  return total;
}

export function shouldUseZipNum(
  totalBytes: number,
  thresholdBytes: number = DEFAULT_ZIPNUM_THRESHOLD_BYTES,
): boolean {
  return totalBytes >= thresholdBytes;
}

/** One .idx line; offset/length are JSON numbers here (unlike CDXJ lines). */
export function zipNumIdxLine(block: ZipNumBlock): string {
  const json = JSON.stringify({
    offset: block.offset,
    length: block.length,
    digest: block.digest,
    filename: ZIPNUM_CDX_FILENAME,
  });
  return `${block.urlkey} ${block.timestamp} ${json}`;
}

/**
 * Write sorted CDXJ lines as independent gzip members of `linesPerBlock` lines to
 * `cdxGzPath`, and the block index to `idxPath`. Returns the blocks written.
 */
export async function writeZipNumIndex(
  sortedLines: Iterable<string> | AsyncIterable<string>,
  cdxGzPath: string,
  idxPath: string,
  linesPerBlock: number = ZIPNUM_LINES_PER_BLOCK,
): Promise<ZipNumBlock[]> {
  if (!Number.isInteger(linesPerBlock) || linesPerBlock < 1) {
    throw new Error(`linesPerBlock must be a positive integer, got ${linesPerBlock}`);
  }
  const blocks: ZipNumBlock[] = [];
  const fh = await open(cdxGzPath, "w");
  try {
    let offset = 0;
    for await (const chunk of inGroups(sortedLines, linesPerBlock)) {
      const compressed = await gzipAsync(Buffer.from(chunk.join("\n") + "\n", "utf8"));
      await fh.write(compressed);
      const { urlkey, timestamp } = cdxjLineParts(chunk[0]!);
      blocks.push({
        urlkey,
        timestamp,
        offset,
        length: compressed.length,
        digest: "sha256:" + createHash("sha256").update(compressed).digest("hex"),
      });
      offset += compressed.length;
    }
  } finally {
    await fh.close();
  }
  const idx = [ZIPNUM_META_LINE, ...blocks.map(zipNumIdxLine)].join("\n") + "\n";
  await writeFile(idxPath, idx, "utf8");
  return blocks;
}

/** Consecutive groups of `size` lines (the last one may be shorter). */
async function* inGroups(lines: Iterable<string> | AsyncIterable<string>, size: number): AsyncGenerator<string[], void, undefined> {
  let group: string[] = [];
  for await (const line of lines) {
    group.push(line);
    if (group.length === size) {
      yield group;
      group = [];
    }
  }
  if (group.length) yield group;
}

/** Write sorted lines as a plain CDXJ file, in batches so no giant string is built. */
export async function writePlainCdxj(
  sortedLines: Iterable<string> | AsyncIterable<string>,
  path: string,
): Promise<void> {
  const fh = await open(path, "w");
  try {
    for await (const group of inGroups(sortedLines, 4096)) await fh.write(group.join("\n") + "\n", null, "utf8");
  } finally {
    await fh.close();
  }
}

export interface WriteCdxIndexesOptions {
  thresholdBytes?: number;
  linesPerBlock?: number;
}

/**
 * Write the index files for a WACZ into `dir` (a private temp dir) and return
 * the zip entries to add: plain below the threshold, ZipNum at or above it.
 */
export async function writeCdxIndexes(
  sorted: readonly string[] | SortedLines,
  dir: string,
  opts: WriteCdxIndexesOptions = {},
): Promise<IndexEntry[]> {
  const isArray = (x: readonly string[] | SortedLines): x is readonly string[] => Array.isArray(x);
  const total = isArray(sorted) ? cdxjByteSize(sorted) : sorted.bytes;
  const sortedLines = isArray(sorted) ? sorted : sorted.lines();
  if (!shouldUseZipNum(total, opts.thresholdBytes ?? DEFAULT_ZIPNUM_THRESHOLD_BYTES)) {
    const path = join(dir, PLAIN_CDXJ_FILENAME);
    await writePlainCdxj(sortedLines, path);
    return [{ zipPath: `indexes/${PLAIN_CDXJ_FILENAME}`, sourcePath: path }];
  }
  const cdxGzPath = join(dir, ZIPNUM_CDX_FILENAME);
  const idxPath = join(dir, ZIPNUM_IDX_FILENAME);
  await writeZipNumIndex(sortedLines, cdxGzPath, idxPath, opts.linesPerBlock);
  return [
    { zipPath: `indexes/${ZIPNUM_CDX_FILENAME}`, sourcePath: cdxGzPath },
    { zipPath: `indexes/${ZIPNUM_IDX_FILENAME}`, sourcePath: idxPath },
  ];
}
