import { type DedupeRedis, DedupeIndex, finishPurges, rankCrawls } from "../src/dedupe/index.js";
import { pauseForTests } from "../src/util/testSeams.js";
import { errorMessage, logger } from "../src/log/logger.js";
import { formatBytes, ProgressLine } from "../src/log/progress.js";
import { countConservedSizes } from "./conservedSize.js";
import { ImportQueue } from "./importQueue.js";
import { importWacz, type WaczImportResult } from "./importWacz.js";
import { handleRemovedCrawls, type RemovalReport } from "./removal.js";
import { displayLocation, resolveSources, type SourceProblem } from "./sources.js";

export interface ImportRunOptions {
  sourceUrl: string;
  sourceCrawlId?: string;
  remove: boolean;
  force: boolean;
  importerId: string;
  /** Also build the capture history (u:<crawlId>, allurls) from the CDX. */
  history: boolean;
}

export interface ImportSummary {
  resources: number;
  imported: WaczImportResult[];
  /** Entries that could not be imported (the others were). */
  failed: SourceProblem[];
  removal: RemovalReport;
  lines: number;
  bytesRead: number;
  seconds: number;
}

/**
 * One import run: finish any purge a killed run left, expand the source into WACZ files, queue the new
 * ones, import queued entries (with other importers, if any) until none is left anywhere, count what their
 * revisits conserved, then track crawls that left the manifest.
 */
export async function runImport(redis: DedupeRedis, options: ImportRunOptions): Promise<ImportSummary> {
  const started = performance.now();
  const { resources, problems } = await resolveSources(options.sourceUrl, { sourceCrawlId: options.sourceCrawlId });
  for (const problem of problems) logger.error("indexer", `${problem.entry}: ${problem.message}`);

  // A purge is a recorded intention: one a killed run left is finished before anything else, so its crawls'
  // WACZ files are no longer counted as imported (and are imported again if this manifest has them).
  const finished = await finishPurges(redis);
  if (finished.length) logger.info("indexer", "finished the purge an earlier run left", { crawls: finished });
  // Which crawl allhashes names for a shared payload: the first in manifest order.
  await rankCrawls(redis, resources.map((r) => r.crawlId));
  // WACZ positions in c:<crawlId>:wacz follow manifest order, whichever importer gets to a file first.
  for (const resource of resources) await new DedupeIndex(redis, resource.crawlId).registerWacz(resource.name);
  await pauseForTests("indexer-registered");
  const queue = new ImportQueue(redis, options.importerId);
  const queued = await queue.enqueue(resources);
  await pauseForTests("indexer-enqueued");
  logger.info("indexer", "import started", { source: options.sourceUrl, resources: resources.length, newlyQueued: queued });

  const imported: WaczImportResult[] = [];
  const failed: SourceProblem[] = [...problems];
  const progress = new ProgressLine();
  try {
    for (;;) {
      const lease = await queue.take();
      if (!lease) {
        if (await queue.isDrained()) break;
        await queue.recoverExpired();
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      const resource = lease.resource;
      await pauseForTests("indexer-taken");
      const where = displayLocation(resource.location);
      const renewal = setInterval(() => void queue.renew(lease).catch(() => undefined), 3000);
      try {
        const result = await importWacz(redis, resource, { history: options.history });
        await pauseForTests("indexer-imported");
        if (!(await queue.release(lease))) logger.warn("indexer", `${resource.name}: lease lost while importing (the entry was requeued; importing it again is harmless)`);
        imported.push(result);
        logger.info("indexer", result.alreadyIndexed ? "WACZ already in the index" : "WACZ imported", { ...result, location: where });
      } catch (err) {
        await queue.fail(lease);
        await new DedupeIndex(redis, resource.crawlId).dropUnusedWaczList().catch(() => undefined);
        // Reader errors name the location themselves; it is in the entry label already.
        const message = errorMessage(err).replace(`${resource.location}: `, "");
        failed.push({ entry: `${resource.name} (${where})`, message });
        logger.error("indexer", `${resource.name} (${where}): ${message}`);
      } finally {
        clearInterval(renewal);
      }
      await pauseForTests("indexer-released");
      const fraction = await queue.updateProgress();
      const lines = imported.reduce((sum, r) => sum + r.lines, 0);
      progress.update(`imported ${Math.round(fraction * 100)}% of WACZ files | ${lines} CDX lines | ${failed.length} failed`);
    }
  } finally {
    progress.stop();
  }
  failed.push(...(await countConservedSizes(redis)));
  await queue.updateProgress();
  await queue.markRunFinished();

  const manifestCrawls = new Set(resources.map((r) => r.crawlId));
  // A manifest with unreadable entries may be missing crawls that still exist: never purge on it.
  const remove = options.remove && problems.length === 0;
  if (options.remove && !remove) logger.error("indexer", "not purging: the manifest had entries that could not be read");
  const removal = await handleRemovedCrawls(redis, manifestCrawls, { remove, force: options.force });
  const summary: ImportSummary = {
    resources: resources.length,
    imported,
    failed,
    removal,
    lines: imported.reduce((sum, r) => sum + r.lines, 0),
    bytesRead: imported.reduce((sum, r) => sum + r.bytesRead, 0),
    seconds: (performance.now() - started) / 1000,
  };
  logger.info("indexer", "import finished", {
    resources: summary.resources, imported: imported.length, failed: failed.length, lines: summary.lines,
    bytesRead: formatBytes(summary.bytesRead), seconds: Math.round(summary.seconds * 10) / 10,
    removedCrawls: removal.removed.map((r) => r.crawlId), purged: removal.purged,
  });
  return summary;
}
