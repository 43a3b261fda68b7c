import { mkdir, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { iterCdxjLines } from "./cdxj.js";
import { sortLinesExternally } from "./externalSort.js";
import { writePlainCdxj } from "./zipnum.js";

/**
 * browsertrix-crawler's --generateCDX: one plain, bytewise-sorted CDXJ index of WARC files (warcio's
 * indexer: one line per response, revisit and resource record, filename = the WARC's name in archive/),
 * sorted on disk so an index larger than memory still fits. Written beside its path, then renamed.
 * Returns how many lines it holds.
 */
export async function writeCdxjIndex(warcFiles: string[], outputPath: string, tmpDir: string): Promise<number> {
  await mkdir(dirname(outputPath), { recursive: true });
  const sorted = await sortLinesExternally(iterCdxjLines(warcFiles), { tmpDir });
  const partial = `${outputPath}.partial`;
  try {
    await writePlainCdxj(sorted.lines(), partial);
    await rename(partial, outputPath);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  } finally {
    await sorted.cleanup();
  }
  return sorted.count;
}
