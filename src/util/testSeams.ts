import { appendFileSync } from "node:fs";
import { logger } from "../log/logger.js";

/**
 * Every test seam of the crawler and the indexer, behind one object. A production process gets
 * NO_TEST_SEAMS, which does nothing; only a test mode (some CRAWLER_TEST_* variable set, as the test suite
 * always does with CRAWLER_TEST_NO_DNS) builds the value that reads them. This file is the only one of src/
 * and indexer/ that names a test variable (checked by the architecture test).
 */
export interface TestSeams {
  /**
   * Kill points of the fault tests: with CRAWLER_TEST_PAUSE_AT=<point>[,<point>...] the process logs
   * "test pause at <point>" and waits CRAWLER_TEST_PAUSE_MS (default 3000) there, so that a test can kill
   * it at exactly that step.
   */
  pause(point: string): Promise<void>;
  /**
   * How the crawler's files are written (durable/appendLog.ts' options), for the power-loss test and
   * bench/durablePages.ts. CRAWLER_TEST_SYNC_LOG=<path>: each time an append log is known to be on disk up to
   * some size (a completed fdatasync, or its close), "<name> <bytes>\n" is appended there, and "<name> entry\n"
   * once its name is (its folder synced after it was created), before anything that sync covers counts as
   * written; a test that kills the crawler cuts each file back to its last line. CRAWLER_TEST_NO_DURABLE_WRITES=1:
   * appends count as written without waiting for a sync (what the power-loss test must catch).
   */
  fileWriting(): FileWriting;
  /** CRAWLER_TEST_HOSTS="name=127.0.0.2,other=127.0.0.3": names resolved to these addresses by the crawler and Chromium (unparsed pairs). */
  hostPairs(): string[];
  /** CRAWLER_TEST_LINK_LOCAL="127.0.0.2/32": (loopback) ranges that count as link-local. */
  linkLocalRanges(): string[];
  /**
   * CRAWLER_TEST_NO_DNS=1 (set for the whole test suite): no name is ever asked of DNS, so no test can send a
   * packet off loopback through a name it did not mean to resolve. Says why a name was not resolved, or
   * undefined when DNS may be asked.
   */
  dnsForbidden(): string | undefined;
  /** CRAWLER_TEST_LIVE_VIEW_OFF_LOOPBACK=1: the live view on a 127.0.0.x address acts as it would off loopback (tests never leave loopback). */
  liveViewOffLoopback(): boolean;
  /**
   * WARC_CRAWLER_TEST_FAIL_BODY_ONCE=<text>: true (once per URL) when the first body read of a URL containing
   * <text> is to fail, as when the browser cannot give a body.
   */
  failBodyReadOnce(url: string): boolean;
  /** WARC_CRAWLER_TEST_UPLOAD_PART_MIB: a smaller upload part size (MiB), so that tests reach the multipart path with a small file. */
  uploadPartMib(): number | undefined;
  /** CRAWLER_TEST_CONTAINER_MARKERS (paths, `:`-separated): the files that say this process runs in a container. */
  containerMarkers(): string[] | undefined;
  /** CRAWLER_TEST_PID_NAMESPACE=<name>: the pid namespace this process claims (where `unshare --pid` is not allowed). */
  pidNamespace(): string | undefined;
  /** CRAWLER_TEST_DRAIN_MS=<ms>: a page's drain deadline (capture/pageAttempt.ts END_DRAIN_DEADLINE_MS), so a test reaches what is written after it. */
  drainDeadlineMs(): number | undefined;
}

/** The append logs' test sync log (durable/appendLog.ts' SyncLog). */
export interface SyncLog {
  synced(filename: string, upTo: number): void;
  entrySynced(filename: string): void;
}

/** Options of the crawler's append logs (durable/appendLog.ts' AppendLogOptions) that the tests set. */
export interface FileWriting {
  durable: boolean;
  syncLog: SyncLog | undefined;
}

/** What a production process gets: no seam does anything. */
export const NO_TEST_SEAMS: TestSeams = {
  pause: async () => {},
  fileWriting: () => ({ durable: true, syncLog: undefined }),
  hostPairs: () => [],
  linkLocalRanges: () => [],
  dnsForbidden: () => undefined,
  liveViewOffLoopback: () => false,
  failBodyReadOnce: () => false,
  uploadPartMib: () => undefined,
  containerMarkers: () => undefined,
  pidNamespace: () => undefined,
  drainDeadlineMs: () => undefined,
};

const TEST_VARIABLE = /CRAWLER_TEST_/;

/**
 * The seams for an environment: NO_TEST_SEAMS unless it sets a test variable. The test value reads the
 * variables when asked, not once, so that an in-process test may change them between its steps.
 */
export function testSeamsFrom(env: NodeJS.ProcessEnv): TestSeams {
  if (!Object.keys(env).some((name) => TEST_VARIABLE.test(name))) return NO_TEST_SEAMS;
  const list = (value: string | undefined, separator: string) => (value ?? "").split(separator).map((s) => s.trim()).filter(Boolean);
  const failedOnce = new Set<string>();
  return {
    async pause(point) {
      const points = env.CRAWLER_TEST_PAUSE_AT;
      if (!points || !points.split(",").includes(point)) return;
      logger.info("test", `test pause at ${point}`);
      await new Promise((resolve) => setTimeout(resolve, Number(env.CRAWLER_TEST_PAUSE_MS ?? 3000)));
    },
    fileWriting() {
      const path = env.CRAWLER_TEST_SYNC_LOG;
      const syncLog: SyncLog | undefined = path
        ? { synced: (filename, upTo) => appendFileSync(path, `${filename} ${upTo}\n`), entrySynced: (filename) => appendFileSync(path, `${filename} entry\n`) }
        : undefined;
      return { durable: env.CRAWLER_TEST_NO_DURABLE_WRITES !== "1", syncLog };
    },
    hostPairs: () => list(env.CRAWLER_TEST_HOSTS, ","),
    linkLocalRanges: () => list(env.CRAWLER_TEST_LINK_LOCAL, ","),
    dnsForbidden: () => (env.CRAWLER_TEST_NO_DNS === "1" ? "not resolved in tests (CRAWLER_TEST_NO_DNS)" : undefined),
    liveViewOffLoopback: () => env.CRAWLER_TEST_LIVE_VIEW_OFF_LOOPBACK === "1",
    failBodyReadOnce(url) {
      const match = env.WARC_CRAWLER_TEST_FAIL_BODY_ONCE;
      if (!match || !url.includes(match) || failedOnce.has(url)) return false;
      failedOnce.add(url);
      return true;
    },
    uploadPartMib() {
      const mib = Number(env.WARC_CRAWLER_TEST_UPLOAD_PART_MIB);
      return mib > 0 ? mib : undefined;
    },
    containerMarkers: () => env.CRAWLER_TEST_CONTAINER_MARKERS?.split(":"),
    pidNamespace: () => env.CRAWLER_TEST_PID_NAMESPACE || undefined,
    drainDeadlineMs() {
      const ms = Number(env.CRAWLER_TEST_DRAIN_MS);
      return ms > 0 ? ms : undefined;
    },
  };
}

/**
 * The process's seams, built once when this module loads. A module-level value rather than a parameter: the
 * pause points sit deep in the crawl, the indexer and the dedupe index, and threading a do-nothing object
 * through each layer for them would widen every signature on the way. The other seams are asked where the
 * run is put together and handed down as options.
 */
const processSeams = testSeamsFrom(process.env);

export function testSeams(): TestSeams {
  return processSeams;
}

/** A kill point of the fault tests (TestSeams.pause): does nothing outside a test mode. */
export function pauseForTests(point: string): Promise<void> {
  return processSeams.pause(point);
}
