import { logger } from "../log/logger.js";

/**
 * Test seam for the fault tests: with CRAWLER_TEST_PAUSE_AT=<point>[,<point>...] the process logs
 * "test pause at <point>" and waits CRAWLER_TEST_PAUSE_MS (default 3000) there, so that a test can kill
 * it at exactly that step. Without the variable this does nothing.
 */
export async function pauseForTests(point: string): Promise<void> {
  const points = process.env.CRAWLER_TEST_PAUSE_AT;
  if (!points || !points.split(",").includes(point)) return;
  logger.info("test", `test pause at ${point}`);
  await new Promise((resolve) => setTimeout(resolve, Number(process.env.CRAWLER_TEST_PAUSE_MS ?? 3000)));
}
