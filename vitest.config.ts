import { defineConfig } from "vitest/config";
import { longestFirstSequencer } from "./test/helpers/longestFirstSequencer.js";

// Seconds each long file took on CI, two files at a time (files not listed: under a minute). The longest start
// first so that the two workers end together; a fresh CI machine has no duration cache to order them by.
const SECONDS_ON_CI: Record<string, number> = {
  "test/multiProcess.e2e.test.ts": 494,
  "test/reliability.e2e.test.ts": 375,
  "test/hostileBodies.e2e.test.ts": 269,
  "test/faults.e2e.test.ts": 259,
  "test/btxLifecycle.e2e.test.ts": 219,
  "test/btxCompat.e2e.test.ts": 187,
  "test/profile.e2e.test.ts": 166,
  "test/btxDedupeFlags.e2e.test.ts": 157,
  "test/resume.test.ts": 59,
  "test/packagingIntegrity.e2e.test.ts": 56,
  "test/storage.e2e.test.ts": 51,
};

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Two files at a time on the 2-core machine: every suite starts its own redis-server, site and browser on
    // free loopback ports and its own temp folders, so files do not share state. Measured: 1,713 s one at a
    // time, 1,006 s two at a time (73 files, 735 tests, all passing both ways); 2,687 s two at a time for 84
    // files, 812 tests (proxies, blocking, profiles and the live view added; multiProcess 494 s, reliability 375 s).
    fileParallelism: true,
    maxWorkers: 2,
    sequence: { sequencer: longestFirstSequencer(SECONDS_ON_CI, 30) },
    // Tests marked concurrent (independent crawls that mostly wait on their pages) run two at a time.
    maxConcurrency: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ["default"],
    // No test may resolve a name through DNS (a packet off loopback): the crawler's address policy
    // refuses names that are not localhost or mapped by CRAWLER_TEST_HOSTS (children inherit this).
    // No crawler server (--healthCheckPort, --debugAccessBrowser, --debugAccessRedis, --screencastPort) listens beyond loopback either.
    env: { CRAWLER_TEST_NO_DNS: "1", HEALTHCHECK_HOST: "127.0.0.1", DEBUG_ACCESS_HOST: "127.0.0.1", SCREENCAST_HOST: "127.0.0.1" },
  },
});
