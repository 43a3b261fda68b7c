import { logger } from "../../log/logger.js";
import type { PageAdmission } from "../../scope/admission.js";
import type { CrawlState, QueuedPage } from "../../state/crawlState.js";
import type { SeedBudgets } from "../../state/seedBudgets.js";

/**
 * Before a page taken from the queue starts: a slot of its seed's budget and its host's page cap, taken
 * in one step for every process of the crawl. A page queued before its seed's budget was spent is skipped
 * (its lease settled, listed in the skipped-pages report with the reason): false is returned then.
 */
export async function startsWithinBudget(page: QueuedPage, context: { state: CrawlState; budgets: SeedBudgets; admission: PageAdmission }): Promise<boolean> {
  const refusal = await context.budgets.reserve(page);
  if (!refusal) return true;
  if (await context.state.markSkipped(page.url, refusal)) context.admission.skipped(page, refusal);
  logger.info("page", refusal === "hostPageLimit" ? "page skipped: its host's page cap is reached (--maxPagesPerHost)" : "page skipped: its seed's budget is spent", { url: page.url, seedId: page.seedId, reason: refusal });
  return false;
}
