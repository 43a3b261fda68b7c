import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Browser + redis-server suites are heavy on a 2-core machine: run files one at a time.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ["default"],
    // No test may resolve a name through DNS (a packet off loopback): the crawler's address policy
    // refuses names that are not localhost or mapped by CRAWLER_TEST_HOSTS (children inherit this).
    // No crawler server (--healthCheckPort, --debugAccessBrowser, --debugAccessRedis) listens beyond loopback either.
    env: { CRAWLER_TEST_NO_DNS: "1", HEALTHCHECK_HOST: "127.0.0.1", DEBUG_ACCESS_HOST: "127.0.0.1" },
  },
});
