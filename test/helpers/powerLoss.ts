import { existsSync, readdirSync, readFileSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";

/** One WARC file of a killed crawler, after the simulated power loss. */
export interface CutWarc {
  filename: string;
  /** Its size when the process was killed (everything it wrote was still in the page cache). */
  sizeAtKill: number;
  /** What its last completed sync vouched for: all that a host crash is sure to leave. */
  synced: number;
}

/**
 * The last size each WARC file was synced to, from the crawler's CRAWLER_TEST_SYNC_LOG ("<filename> <bytes>"
 * lines, src/util/durabilityHooks.ts). A line the kill cut in half counts for nothing: it was written before
 * the sync it reports counted for anything.
 */
export function lastSyncedSizes(syncLog: string): Map<string, number> {
  const synced = new Map<string, number>();
  if (!existsSync(syncLog)) return synced;
  for (const line of readFileSync(syncLog, "utf8").split("\n")) {
    const match = /^(\S+\.warc\.gz) (\d+)$/.exec(line);
    if (match) synced.set(match[1]!, Math.max(synced.get(match[1]!) ?? 0, Number(match[2])));
  }
  return synced;
}

/**
 * Simulate a host crash after the crawler was SIGKILLed: every WARC file in `archiveDir` is cut back to
 * its last synced size (a file never synced to nothing), as if the bytes written after that sync were
 * still in the page cache when the power went. Their `.open` markers (never synced) are left as they are.
 */
export function cutToLastSync(archiveDir: string, syncLog: string): CutWarc[] {
  const synced = lastSyncedSizes(syncLog);
  return readdirSync(archiveDir)
    .filter((f) => f.endsWith(".warc.gz"))
    .sort()
    .map((filename) => {
      const path = join(archiveDir, filename);
      const sizeAtKill = statSync(path).size;
      const kept = Math.min(sizeAtKill, synced.get(filename) ?? 0);
      truncateSync(path, kept);
      return { filename, sizeAtKill, synced: kept };
    });
}
