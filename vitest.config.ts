import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { longestFirstSequencer } from "./test/helpers/longestFirstSequencer.js";

// Seconds each file took in a full run (scripts/test-durations.mjs writes it from a vitest JSON report): the
// longest start first, so that the workers end together. A file not listed counts as 5 s.
const SECONDS_BY_FILE = JSON.parse(readFileSync(new URL("./test/durations.json", import.meta.url), "utf8")) as Record<string, number>;

export default defineConfig({
  test: {
    // One file more than there are cores: much of a file's time is spent waiting (page timeouts, retry waits,
    // leases), which a third file fills. Every suite starts its own redis-server, site and browser on free
    // loopback ports and its own temp folders, so files do not share state (docs/develop/tests.md has the
    // measurements behind these settings).
    fileParallelism: true,
    maxWorkers: Math.min(8, availableParallelism() + 1),
    sequence: { sequencer: longestFirstSequencer(SECONDS_BY_FILE, 5) },
    // Tests marked concurrent (independent crawls that mostly wait on their pages) run two at a time.
    maxConcurrency: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ["default"],
    // No test may resolve a name through DNS (a packet off loopback): the crawler's address policy
    // refuses names that are not localhost or mapped by CRAWLER_TEST_HOSTS (children inherit this).
    // No crawler server (--healthCheckPort, --metricsPort, --debugAccessBrowser, --debugAccessRedis, --screencastPort) listens beyond loopback either.
    env: { CRAWLER_TEST_NO_DNS: "1", HEALTHCHECK_HOST: "127.0.0.1", METRICS_HOST: "127.0.0.1", DEBUG_ACCESS_HOST: "127.0.0.1", SCREENCAST_HOST: "127.0.0.1" },
    projects: [
      // Unit test files share their workers and loaded modules (no new process and imports per file, which
      // cost more than most of these files' tests): a unit test restores what it changes (process.env in
      // place, spies) and keeps no state in modules. End-to-end files each get a process of their own.
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts"], isolate: false } },
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.test.ts"] } },
    ],
  },
});
