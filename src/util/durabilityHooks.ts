import { appendFileSync } from "node:fs";

/**
 * Test seams of the power-loss test (test/durableWrites.e2e.test.ts) and the per-page cost benchmark
 * (bench/durablePages.ts); without their variables they do nothing.
 *
 * CRAWLER_TEST_SYNC_LOG=<path>: each time a WARC file is known to be on disk up to some size (a completed
 * fdatasync, or the file's close), "<filename> <bytes>\n" is appended there, before any record that sync
 * covers counts as written. A test that kills the crawler cuts every WARC back to its last line: what a
 * host crash would leave.
 */
export function syncLogForTests(): ((filename: string, upTo: number) => void) | undefined {
  const path = process.env.CRAWLER_TEST_SYNC_LOG;
  if (!path) return undefined;
  return (filename, upTo) => appendFileSync(path, `${filename} ${upTo}\n`);
}

/** CRAWLER_TEST_NO_DURABLE_WRITES=1: records count as written without waiting for a sync (what the test must catch). */
export function durableWritesForTests(): boolean {
  return process.env.CRAWLER_TEST_NO_DURABLE_WRITES !== "1";
}
