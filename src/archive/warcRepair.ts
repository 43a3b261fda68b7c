import { existsSync, readdirSync, readFileSync, rmSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { openMarkerName } from "./warcWriter.js";

export interface RepairedWarc {
  filename: string;
  /** Bytes cut off the end (a record that was being written when its writer died). */
  truncatedBytes: number;
}

/**
 * WARC files whose writer died have an `.open` marker with the size up to which they are whole: cut
 * them back to that size (a half-written record is dropped; its page was never marked done, so it is
 * crawled again) and remove the marker. Files of writers still alive are left alone.
 */
export async function repairUnfinishedWarcs(
  dir: string,
  isWriterAlive: (owner: string) => Promise<boolean>,
): Promise<RepairedWarc[]> {
  if (!existsSync(dir)) return [];
  const repaired: RepairedWarc[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".warc.gz"))) {
    const markerPath = join(dir, openMarkerName(name));
    if (!existsSync(markerPath)) continue;
    const [sizeText, owner = ""] = readFileSync(markerPath, "utf8").split("\n");
    if (owner && (await isWriterAlive(owner))) continue;
    const wholeSize = Number(sizeText);
    const path = join(dir, name);
    const size = statSync(path).size;
    if (Number.isFinite(wholeSize) && wholeSize < size) truncateSync(path, wholeSize);
    rmSync(markerPath);
    repaired.push({ filename: name, truncatedBytes: Math.max(0, size - wholeSize) });
  }
  return repaired;
}
