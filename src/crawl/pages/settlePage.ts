import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { performance } from "node:perf_hooks";
import { addToTally } from "../../behaviors/behaviors.js";
import { errorMessage, logger } from "../../log/logger.js";
import type { PageAttempt, PageContext, Settlement } from "./pageChain.js";
import type { QueuedPage } from "../../frontier/frontier.js";
import { settleRateLimited } from "../../politeness/rateLimit.js";

/**
 * The one place a page attempt's lease is settled, whichever step decided how. Returns whether the page
 * counts as crawled (its budget slot then stays taken; otherwise the caller gives it back).
 */
export async function settlePage(attempt: PageAttempt, settlement: Settlement): Promise<boolean> {
  const { page, worker } = attempt;
  let retried = false;
  try {
    const settled = await settle(attempt, settlement);
    retried = settled === "retry";
    return settled === "crawled";
  } finally {
    // A retry of the page in this process answers what its attempts stored from the archive; once settled, that is let go.
    if (!retried) worker.forgetAttempts(page.url);
  }
}

async function settle(attempt: PageAttempt, settlement: Settlement): Promise<"crawled" | "retry" | "other"> {
  const { page, context, worker } = attempt;
  const { state, options } = context;
  switch (settlement.kind) {
    case "crawled": {
      // Packaging lists a page only in the WACZ named here; a page whose lease was lost meanwhile is
      // counted (and listed) by the process that crawls it again.
      const settled = await state.markDone(page.url, settlement.listedIn);
      if (settled) await context.budgets.finished(page, attempt.tally.take(lateBytes(context, page)));
      if (settlement.fresh) logger.info("page", "page skipped (fresh)", { url: page.url, archived: settlement.fresh.archived });
      else await reportCrawled(attempt);
      return settled ? "crawled" : "other";
    }
    case "skipped":
      if (await state.markSkipped(page.url, settlement.reason)) context.admission.skipped(page, settlement.reason);
      logger.info("page", settlement.message, settlement.details);
      return "other";
    case "failed": {
      const outcome = await state.markFailed(page.url, settlement.reason, settlement.maxRetries);
      if (!settlement.logged) logger.warn("page", outcome === "failed" ? "page failed" : "page failed, will retry", { url: page.url, error: settlement.error });
      context.watch.attemptFailed(page, outcome, settlement.error);
      if (outcome === "failed") await checkFailedLimit(context);
      return outcome === "retry" ? "retry" : "other";
    }
    case "handedBack":
      await state.handBack(page.url);
      return "other";
    case "deferred": {
      const until = settlement.until;
      if ("hostTurnInMs" in until) {
        await state.defer(page.url, until.hostTurnInMs);
        logger.debug("page", "host backed off: page put back until its turn", { url: page.url, waitSeconds: until.hostTurnInMs / 1000 });
        return "other";
      }
      if ("laterInMs" in until) {
        await state.defer(page.url, until.laterInMs);
        logger.debug("page", `page put back: ${until.why}`, { url: page.url, waitSeconds: until.laterInMs / 1000 });
        return "other";
      }
      // Not the page, and not a failed attempt: nothing was stored; the host is backed off (first, so that
      // no worker of any process starts another page there meanwhile) and the page waits it out.
      const outcome = await settleRateLimited(page.url, until.rateLimit, { state, hostPacing: context.hostPacing, limits: options.rateLimit });
      await worker.reset();
      context.watch.attemptFailed(page, outcome, until.error);
      await context.watch.rateLimitAnswer(until.rateLimit);
      if (outcome === "failed") await checkFailedLimit(context);
      return "other";
    }
  }
}

/** A loaded page is crawled: the crawl's figures, the log, the pause after it (--pageExtraDelay). */
async function reportCrawled(attempt: PageAttempt): Promise<void> {
  const { page, context, result } = attempt;
  if (!result?.document) return;
  context.watch.pageCrawled((performance.now() - attempt.loadStarted) / 1000, result.capture ?? "browser");
  if (result.behaviors) addToTally(context.behaviors, result.behaviors);
  const crawled = { url: page.url, status: result.document.status, title: result.title, depth: page.depth, linksQueued: attempt.queued, capture: result.capture ?? "browser" };
  if (result.truncated.length) {
    // Retries did not get every body whole: stored as received (WARC-Truncated), and said so.
    context.truncated.count += 1;
    appendTruncatedReport(context.truncated.report, { url: page.url, truncated: result.truncated });
    logger.warn("page", "page crawled, but truncated: bodies cut off on every attempt are stored marked WARC-Truncated", { ...crawled, truncated: result.truncated });
  } else {
    logger.info("page", "page crawled", crawled);
  }
  if (context.options.pageExtraDelay > 0) await context.stop.sleep(context.options.pageExtraDelay * 1000);
}

function appendTruncatedReport(path: string, entry: { url: string; truncated: string[] }): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    appendFileSync(path, JSON.stringify(entry) + "\n");
  } catch (err) {
    logger.warn("page", "could not list the truncated page in the report", { path, error: errorMessage(err) });
  }
}

async function checkFailedLimit(context: PageContext): Promise<void> {
  const { options, state, stop } = context;
  if (options.failOnFailedLimit > 0 && (await state.counts()).failed >= options.failOnFailedLimit) {
    logger.error("crawl", `${options.failOnFailedLimit} pages failed (--failOnFailedLimit): stopping the crawl`);
    stop.request("failed-limit");
  }
}

/** Where a settled page's later bytes go (what its capture stores past its end): straight to its seed's count. */
export function lateBytes(context: PageContext, page: QueuedPage): (bytes: number) => void {
  return (bytes) => {
    context.budgets.addBytes(page, bytes).catch((err: unknown) => logger.warn("page", "cannot count bytes written after the page in its seed's size", { url: page.url, bytes, error: errorMessage(err) }));
  };
}
