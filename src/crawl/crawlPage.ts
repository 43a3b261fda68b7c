import { randomUUID } from "node:crypto";
import type { CrawlOptions } from "../config/crawlOptions.js";
import { errorMessage, logger } from "../log/logger.js";
import type { CrawlState, QueuedPage } from "../state/crawlState.js";
import type { PageList } from "./pageList.js";
import type { PageWorker } from "./pageWorker.js";
import type { SeedScope } from "./scope.js";
import type { StopControl } from "./stopControl.js";
import { isStorageError, storageErrorMessage } from "./storageErrors.js";

export interface PageContext {
  options: CrawlOptions;
  state: CrawlState;
  scopes: SeedScope[];
  pageList: PageList;
  stop: StopControl;
  /** The WACZ a page finishing now is listed in. */
  currentWacz(): string;
}

/** Crawl one leased page: load and capture it, list it, queue its in-scope links, settle its lease. */
export async function crawlPage(worker: PageWorker, page: QueuedPage, context: PageContext): Promise<void> {
  const { state, options, scopes } = context;
  const scope = scopes[page.seedId] ?? scopes[0];
  await waitForHostTurn(page.url, context);
  logger.debug("page", "loading page", { url: page.url, depth: page.depth, worker: worker.id });

  let result;
  try {
    result = await withDeadline(worker.load(page.url), hardPageDeadlineMs(options));
  } catch (err) {
    // The tab is in an unknown state (hung or crashed): replace it before the next page.
    await worker.reset();
    result = { document: null, title: "", links: [], error: errorMessage(err) };
  }

  if (context.stop.immediate) {
    await state.handBack(page.url);
    return;
  }
  if (!result.document) {
    const outcome = await state.markFailed(page.url, result.error ?? "not loaded", options.maxPageRetries);
    logger.warn("page", outcome === "failed" ? "page failed" : "page failed, will retry", { url: page.url, error: result.error });
    if (outcome === "failed" && options.failOnFailedLimit > 0 && (await state.counts()).failed >= options.failOnFailedLimit) {
      logger.error("crawl", `${options.failOnFailedLimit} pages failed (--failOnFailedLimit): stopping the crawl`);
      context.stop.request("failed-limit");
    }
    return;
  }

  const entry = {
    id: randomUUID(),
    url: page.url,
    ts: result.document.date.toISOString(),
    title: result.title,
    status: result.document.status,
    mime: result.document.mime,
    depth: page.depth,
    seed: page.depth === 0,
  };
  try {
    context.pageList.add(entry, context.currentWacz());
  } catch (err) {
    if (!isStorageError(err)) throw err;
    context.stop.fatal(`cannot write the page list: ${storageErrorMessage(err)}`);
    await state.handBack(page.url);
    return;
  }

  let queued = 0;
  for (const link of result.links) {
    const decision = scope.decide(link, page.depth, page.extraHops);
    if (!decision.inScope) continue;
    const added = await state.enqueue(
      { url: link, depth: page.depth + 1, seedId: page.seedId, extraHops: decision.extraHops },
      options.limit,
    );
    if (added === "queued") queued += 1;
  }
  await state.markDone(page.url);
  logger.info("page", "page crawled", {
    url: page.url,
    status: result.document.status,
    title: result.title,
    depth: page.depth,
    linksQueued: queued,
  });
  if (options.pageExtraDelay > 0) await context.stop.sleep(options.pageExtraDelay * 1000);
}

/** --minHostInterval: wait for this host's turn (shared by all processes through Redis). */
async function waitForHostTurn(url: string, context: PageContext): Promise<void> {
  const intervalMs = Math.round(context.options.minHostInterval * 1000);
  if (intervalMs <= 0) return;
  const host = new URL(url).host;
  for (;;) {
    const waitMs = await context.state.hostTurn(host, intervalMs);
    if (waitMs <= 0 || context.stop.immediate) return;
    await context.stop.sleep(waitMs);
  }
}

function hardPageDeadlineMs(options: CrawlOptions): number {
  return (options.pageLoadTimeout + options.netIdleWait) * 1000 + 30_000;
}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`page did not finish within ${Math.round(ms / 1000)}s`)), ms);
    promise.then(
      (v) => (clearTimeout(timer), resolve(v)),
      (e: unknown) => (clearTimeout(timer), reject(e)),
    );
  });
}
