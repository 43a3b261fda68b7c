import { appendFileSync } from "node:fs";

/**
 * Test seams of the power-loss test (test/durableWrites.e2e.test.ts) and the per-page cost benchmark
 * (bench/durablePages.ts), read here only (appendLog.ts): no writer reads them itself. Without their
 * variables they do nothing.
 *
 * CRAWLER_TEST_SYNC_LOG=<path>: each time an append log is known to be on disk up to some size (a completed
 * fdatasync, or its close), "<name> <bytes>\n" is appended there (a WARC file by its name, a page list by its
 * path in the collection: "pages/..."), before anything that sync covers counts as written. A test that kills
 * the crawler cuts each file back to its last line: what a host crash would leave.
 */
export function syncLogForTests(): ((filename: string, upTo: number) => void) | undefined {
  const path = process.env.CRAWLER_TEST_SYNC_LOG;
  if (!path) return undefined;
  return (filename, upTo) => appendFileSync(path, `${filename} ${upTo}\n`);
}

/**
 * The same log's "<name> entry" lines: the file's name is on disk (its folder synced after it was created), so a
 * host crash keeps the file; the test removes a file whose entry was never synced, as a crash may.
 */
export function entrySyncLogForTests(): ((filename: string) => void) | undefined {
  const path = process.env.CRAWLER_TEST_SYNC_LOG;
  if (!path) return undefined;
  return (filename) => appendFileSync(path, `${filename} entry\n`);
}

/** CRAWLER_TEST_NO_DURABLE_WRITES=1: appends count as written without waiting for a sync (what the power-loss test must catch). */
export function durableWritesForTests(): boolean {
  return process.env.CRAWLER_TEST_NO_DURABLE_WRITES !== "1";
}
