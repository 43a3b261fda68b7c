import { existsSync, readdirSync, readFileSync, rmSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";

/** One file of a killed crawler (a WARC file, a page list), after the simulated power loss. */
export interface CutFile {
  /** As the sync log names it: a WARC file's name, a page list's path in the collection. */
  filename: string;
  /** Its size when the process was killed (everything it wrote was still in the page cache). */
  sizeAtKill: number;
  /** What its last completed sync vouched for: all that a host crash is sure to leave. */
  synced: number;
  /** Its name was never synced (no folder sync after it was created): the crash took the whole file. */
  removed: boolean;
}

/** The files whose names are on disk: the sync log's "<name> entry" lines (a folder synced after they were created). */
export function syncedEntries(syncLog: string): Set<string> {
  if (!existsSync(syncLog)) return new Set();
  return new Set(readFileSync(syncLog, "utf8").split("\n").map((line) => /^(\S+) entry$/.exec(line)?.[1]).filter((name): name is string => name !== undefined));
}

/**
 * The last size each file was synced to, from the crawler's CRAWLER_TEST_SYNC_LOG ("<name> <bytes>" lines,
 * src/util/testSeams.ts: a WARC file by its name, a page list by its path in the collection,
 * "pages/..."). A line the kill cut in half counts for nothing: it was written before the sync it reports
 * counted for anything.
 */
export function lastSyncedSizes(syncLog: string): Map<string, number> {
  const synced = new Map<string, number>();
  if (!existsSync(syncLog)) return synced;
  for (const line of readFileSync(syncLog, "utf8").split("\n")) {
    const match = /^(\S+) (\d+)$/.exec(line);
    if (match) synced.set(match[1]!, Math.max(synced.get(match[1]!) ?? 0, Number(match[2])));
  }
  return synced;
}

/**
 * Simulate a host crash after the crawler was SIGKILLed: every WARC file (archive/) and page list (pages/)
 * of the collection is cut back to its last synced size (a file never synced to nothing), as if the bytes
 * written after that sync were still in the page cache when the power went. A file whose name was never
 * synced (its folder not synced since it was created) is gone, as POSIX allows: a WARC file, a page list, or a
 * WARC file's `.open` marker (whose content, never synced, is otherwise left as it is).
 */
export function cutToLastSync(collectionDir: string, syncLog: string): CutFile[] {
  const synced = lastSyncedSizes(syncLog);
  const entries = syncedEntries(syncLog);
  const archive = join(collectionDir, "archive");
  for (const marker of readdirSync(archive).filter((f) => f.endsWith(".open") && !entries.has(f))) rmSync(join(archive, marker));
  const warcs = readdirSync(archive).filter((f) => f.endsWith(".warc.gz")).map((f) => ({ filename: f, path: join(archive, f) }));
  const pages = readdirSync(join(collectionDir, "pages"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => ({ filename: join("pages", f), path: join(collectionDir, "pages", f) }));
  return [...warcs, ...pages].sort((a, b) => a.filename.localeCompare(b.filename)).map(({ filename, path }) => {
    const sizeAtKill = statSync(path).size;
    if (!entries.has(filename)) {
      rmSync(path);
      return { filename, sizeAtKill, synced: 0, removed: true };
    }
    const kept = Math.min(sizeAtKill, synced.get(filename) ?? 0);
    truncateSync(path, kept);
    return { filename, sizeAtKill, synced: kept, removed: false };
  });
}
