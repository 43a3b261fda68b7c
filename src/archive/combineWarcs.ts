import { createReadStream } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import { writeWholeFile } from "../durable/wholeFile.js";
import { join } from "node:path";
import { WARCSerializer } from "warcio/node";
import { warcinfoRecord } from "./records.js";

export interface CombineWarcsOptions {
  /** The WARC files to combine (full paths). */
  warcFiles: string[];
  /** Where the combined files go (the collection folder). */
  outputDir: string;
  collection: string;
  /** A combined file is not grown past this size by appending another whole WARC file (one larger alone still goes in). */
  rolloverSize: number;
  /** Fields of the warcinfo record each combined file starts with. */
  warcinfo: Record<string, string>;
}

/** browsertrix-crawler's names: <collection>_0.warc.gz, <collection>_1.warc.gz, ... */
export function combinedWarcName(collection: string, n: number): string {
  return `${collection}_${n}.warc.gz`;
}

/**
 * Combine WARC files as browsertrix-crawler's --combineWARC does: the largest file first, each file
 * appended whole (records are gzip members, so concatenation is a valid WARC) after a warcinfo record of
 * the combined file's own, and a new combined file once the next input would take it to --rolloverSize.
 * Each combined file is written beside its final name and renamed when complete, and combined files of an
 * earlier run of the same collection that this run no longer makes are removed. Returns the names written.
 */
export async function combineWarcFiles(options: CombineWarcsOptions): Promise<string[]> {
  const sized = await Promise.all(options.warcFiles.map(async (path) => ({ path, size: (await stat(path)).size })));
  sized.sort((a, b) => b.size - a.size || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  // A combined file's size counts its own warcinfo record too (as browsertrix-crawler measures the file).
  const infoSize = (await warcinfoBytes(combinedWarcName(options.collection, 0), options.warcinfo)).length;
  const groups: string[][] = [];
  let groupSize = 0;
  for (const { path, size } of sized) {
    if (groups.length === 0 || groupSize + size >= options.rolloverSize) {
      groups.push([]);
      groupSize = infoSize;
    }
    groups[groups.length - 1].push(path);
    groupSize += size;
  }
  const names: string[] = [];
  for (const [n, files] of groups.entries()) {
    const name = combinedWarcName(options.collection, n);
    await writeCombined(join(options.outputDir, name), name, files, options.warcinfo);
    names.push(name);
  }
  await removeStale(options.outputDir, options.collection, new Set(names));
  return names;
}

/** The combined file is written whole (write-then-rename): a reader never finds one cut short. */
async function writeCombined(path: string, name: string, files: string[], warcinfo: Record<string, string>): Promise<void> {
  async function* chunks(): AsyncIterable<Uint8Array> {
    yield await warcinfoBytes(name, warcinfo);
    for (const file of files) for await (const chunk of createReadStream(file)) yield chunk as Buffer;
  }
  await writeWholeFile(path, chunks());
}

function warcinfoBytes(name: string, warcinfo: Record<string, string>): Promise<Uint8Array> {
  return WARCSerializer.serialize(warcinfoRecord(name, warcinfo), { gzip: true });
}

/** Combined files of an earlier run beyond the ones written now (the crawl was resumed and combined again). */
async function removeStale(dir: string, collection: string, keep: Set<string>): Promise<void> {
  const pattern = new RegExp(`^${collection.replace(/[.]/g, "\\.")}_\\d+\\.warc\\.gz$`);
  for (const entry of await readdir(dir)) {
    if (pattern.test(entry) && !keep.has(entry)) await rm(join(dir, entry), { force: true });
  }
}
