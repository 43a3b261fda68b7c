import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cutTornTail } from "../durable/appendLog.js";
import { lastWholeMemberEnd } from "./gzipMembers.js";
import { openMarkerName } from "./warcWriter.js";

export interface RepairedWarc {
  filename: string;
  /** Bytes cut off the end (a record that was being written when its writer died). */
  truncatedBytes: number;
  /** Cut at its last whole record, found by reading it: its marker could not be trusted. */
  scanned: boolean;
}

/**
 * WARC files whose writer died have an `.open` marker with the size up to which they are whole: cut
 * them back to that size (a half-written record is dropped; its page was never marked done, so it is
 * crawled again) and remove the marker. Files of writers still alive are left alone.
 *
 * The marker is never synced (that would double the writer's syncs): it is exact only while the page
 * cache its writer wrote into is still there. `trustsMarker` says whether it is (the writer ran in this
 * boot, this namespace); otherwise (the host crashed and rebooted, say: the marker may hold an older size,
 * or nothing, while the file keeps all it synced) and when the marker cannot be read, the file is cut at
 * the end of its last whole record instead, found by reading it.
 */
export async function repairUnfinishedWarcs(
  dir: string,
  isWriterAlive: (owner: string) => Promise<boolean>,
  trustsMarker: (owner: string) => boolean = () => true,
): Promise<RepairedWarc[]> {
  if (!existsSync(dir)) return [];
  const repaired: RepairedWarc[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".warc.gz"))) {
    const markerPath = join(dir, openMarkerName(name));
    if (!existsSync(markerPath)) continue;
    const [sizeText = "", owner = ""] = readFileSync(markerPath, "utf8").split("\n");
    if (owner && (await isWriterAlive(owner))) continue;
    const scanned = !/^\d+$/.test(sizeText) || !owner || !trustsMarker(owner);
    // The torn tail is cut (and the cut synced) by the one durable-append helper, with where a WARC file is whole.
    const { size, kept } = await cutTornTail(join(dir, name), async (_file, _size, path) => (scanned ? lastWholeMemberEnd(path) : Number(sizeText)));
    rmSync(markerPath);
    repaired.push({ filename: name, truncatedBytes: size - kept, scanned });
  }
  return repaired;
}
