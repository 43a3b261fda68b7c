import type { CrawlOptions } from "../../config/crawlOptions.js";
import { logger } from "../../log/logger.js";
import type { PageAdmission } from "../../scope/admission.js";
import type { CrawlState, QueuedPage } from "../../state/crawlState.js";

// --dedupePagesMinDepth (browsertrix-crawler's page-level dedupe): pages at that depth or deeper whose
// HTML is archived already are skipped as duplicates; the page limit then counts crawled pages only.

/** Whether a page this deep is skipped when its document's payload is archived already. */
export function skipsIfArchived(page: QueuedPage, options: CrawlOptions): boolean {
  const minDepth = options.dedupeFlags.pagesMinDepth;
  return minDepth >= 0 && page.depth >= minDepth;
}

/**
 * With --dedupePagesMinDepth the queue is not capped by --limit (duplicates do not count): a page taken
 * once that many pages are crawled is skipped ("pageLimit"), and true is returned.
 */
export async function skippedAtPageLimit(page: QueuedPage, options: CrawlOptions, state: CrawlState, admission: PageAdmission): Promise<boolean> {
  if (options.dedupeFlags.pagesMinDepth < 0 || options.limit <= 0) return false;
  if ((await state.counts()).done < options.limit) return false;
  if (await state.markSkipped(page.url, "pageLimit")) admission.skipped(page, "pageLimit");
  logger.info("page", "page skipped: page limit reached", { url: page.url, limit: options.limit });
  return true;
}

/** The page's document was archived already: written as a revisit; the page is skipped, not crawled. */
export async function skipDuplicatePage(page: QueuedPage, state: CrawlState, admission: PageAdmission): Promise<void> {
  if (await state.markSkipped(page.url, "duplicate")) admission.skipped(page, "duplicate");
  logger.info("page", "page skipped (duplicate): its HTML is archived already, stored as a revisit, not loaded further", { url: page.url, depth: page.depth });
}
