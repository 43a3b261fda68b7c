import { errorMessage, logger } from "../../log/logger.js";
import type { PageWorker } from "../../page/pageWorker.js";
import type { ByteTallySink } from "../../budgets/byteTally.js";
import type { QueuedPage } from "../../frontier/frontier.js";
import { runChain, type PageAttempt, type PageContext } from "./pageChain.js";
import { PAGE_STEPS } from "./pageSteps.js";
import { lateBytes, settlePage } from "./settlePage.js";

export type { PageContext } from "./pageChain.js";
export { extractOptionsOf, hardPageDeadlineMs } from "./pageSteps.js";

/**
 * Crawl one leased page: its steps (pageSteps.ts) load and capture it, list it and queue its in-scope
 * links, or say how the attempt ends instead; settlePage settles its lease. `tally` counts the WARC bytes
 * the worker writes for it (its seed's size).
 */
export async function crawlPage(worker: PageWorker, page: QueuedPage, context: PageContext, workerTally: ByteTallySink): Promise<void> {
  // The page's own sink: what its capture stores after it was settled is still its seed's.
  const tally = workerTally.forPage();
  const attempt: PageAttempt = { worker, page, context, tally, budgetHeld: false, seed: null, previous: null, loadStarted: 0, result: null, landedAt: null, listedIn: "", queued: 0 };
  let crawled = false;
  try {
    crawled = await settlePage(attempt, (await runChain(PAGE_STEPS, attempt)).settlement);
  } finally {
    // Not crawled (failed, retried, put back...): its budget slot is free again, what it wrote still counts.
    if (attempt.budgetHeld && !crawled) await context.budgets.release(page, tally.take(lateBytes(context, page))).catch((err: unknown) => logger.warn("page", "cannot give back the page's budget slot", { url: page.url, error: errorMessage(err) }));
  }
}
