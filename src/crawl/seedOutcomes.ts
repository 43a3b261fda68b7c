import { errorMessage, logger } from "../log/logger.js";
import { seedReportLines, writeSeedReport } from "../reports/seedReport.js";
import type { CrawlCounts } from "../frontier/frontier.js";
import { serializeCrawlState } from "../frontier/savedState.js";
import type { CrawlRun } from "./crawlRun.js";

/**
 * reports/seeds.jsonl at this process's end, from the crawl's shared counts: each seed's pages, bytes and
 * how it ended. A crawl stopped with pages still queued reads the queue once to tell which seeds they
 * belong to (only then: a crawl that ran to its end has none).
 */
export async function reportSeeds(run: CrawlRun, counts: CrawlCounts): Promise<void> {
  const { options, session, stop } = run;
  try {
    const unfinished = new Set<number>();
    const stopped = counts.queued + counts.pending > 0;
    if (stopped) {
      const saved = await serializeCrawlState(session.state, session.redis, session.membership.keys, options.crawlId, (url) => url);
      for (const json of [...saved.queued, ...saved.pending]) {
        unfinished.add(await run.budgets.rootOf(Number((JSON.parse(json) as { seedId?: number }).seedId ?? 0)));
      }
    }
    const lines = seedReportLines({
      seeds: options.seeds, budgets: options.budgets.seeds, tallies: await run.budgets.tallies(), failed: await session.state.failedPages(),
      unfinished, stopReason: stopped ? stop.reason ?? "interrupted" : null,
    });
    writeSeedReport(run.seedsReport, lines);
  } catch (err) {
    logger.warn("crawl", "cannot write the seeds report: the crawl state could not be read", { error: errorMessage(err) });
  }
}
