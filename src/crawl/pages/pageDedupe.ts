import type { CrawlOptions } from "../../config/crawlOptions.js";
import type { QueuedPage } from "../../frontier/frontier.js";

// --dedupePagesMinDepth (browsertrix-crawler's page-level dedupe): pages at that depth or deeper whose
// HTML is archived already are skipped as duplicates; the page limit then counts crawled pages only.

/** Whether a page this deep is skipped when its document's payload is archived already. */
export function skipsIfArchived(page: QueuedPage, options: CrawlOptions): boolean {
  const minDepth = options.dedupeFlags.pagesMinDepth;
  return minDepth >= 0 && page.depth >= minDepth;
}
