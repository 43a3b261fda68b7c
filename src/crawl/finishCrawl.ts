import { existsSync } from "node:fs";
import { join } from "node:path";
import type { DedupeIndex } from "../dedupe/dedupeIndex.js";
import type { DependencyTracker } from "../dedupe/dependencies.js";
import { commitCrawl } from "../dedupe/commit.js";
import { errorMessage, logger } from "../log/logger.js";
import { writeWacz, type WaczResult } from "../wacz/index.js";
import { SOFTWARE } from "../version.js";
import type { CrawlOptions } from "../config/crawlOptions.js";
import type { PageList } from "./pageList.js";
import type { WaczPlan } from "./waczPlan.js";

export interface PackagingContext {
  options: CrawlOptions;
  archiveDir: string;
  outputDir: string;
  plan: WaczPlan;
  pageList: PageList;
  dedupe: DedupeIndex;
  dependencies: DependencyTracker;
  /** reports/changes.jsonl of this writer, packaged when it exists. */
  reportFile: string;
}

/**
 * Package each of this writer's WACZ files (in order, so a later one can depend on an earlier one),
 * with its own pages and its own relation.requires, then complete its c:<crawlId>:wacz entry.
 */
export async function packageWaczFiles(context: PackagingContext): Promise<WaczResult[]> {
  const { options, plan, pageList, dedupe, dependencies } = context;
  const results: WaczResult[] = [];
  for (const group of await plan.groups()) {
    const warcFiles = group.warcFiles.map((f) => join(context.archiveDir, f)).filter((p) => existsSync(p));
    if (!warcFiles.length) continue;
    const pages = pageList.files(group.filename);
    const requires = await withRetries("read dependencies", () => dependencies.requirementsOf(group.index, dedupe));
    const result = await writeWacz({
      outputPath: join(context.outputDir, group.filename),
      warcFiles,
      // Either list may not exist (no seed page in this WACZ, or no page besides the seeds).
      pagesFile: existingFile(pages.pagesFile),
      extraPagesFile: existingFile(pages.extraPagesFile),
      extraEntries: existsSync(context.reportFile) ? [{ zipPath: "reports/changes.jsonl", sourcePath: context.reportFile }] : [],
      software: SOFTWARE,
      title: options.title ?? undefined,
      description: options.description ?? undefined,
      requires,
      // Scratch (sorted runs of a big index) on the collection's disk, not in a small system /tmp.
      tmpDir: context.outputDir,
    });
    await withRetries("complete the WACZ entry", () =>
      dedupe.finishWacz(group.index, { filename: group.filename, hash: result.hash, size: result.size }),
    );
    logger.info("wacz", "WACZ written", {
      path: result.path, size: result.size, hash: result.hash, cdxLines: result.cdxLines, waczIndex: group.index,
      requires: requires.map((r) => r.filename),
    });
    results.push(result);
  }
  return results;
}

/** Commit a finished crawl to the merged dedupe index; on failure it stays uncommitted (and says how to finish). */
export async function commitFinishedCrawl(dedupe: DedupeIndex): Promise<boolean> {
  try {
    const result = await withRetries("commit", () => commitCrawl(dedupe.redis, dedupe.crawlId));
    logger.info("dedupe", result.committed ? "crawl committed to the dedupe index" : "crawl was already committed", { ...result });
    return true;
  } catch (err) {
    logger.error("dedupe", `crawl not committed: ${errorMessage(err)}; run: indexer --redisDedupeUrl URL --commitCrawlId ${dedupe.crawlId}`);
    return false;
  }
}

/** Retry a dedupe-index step with backoff while its Redis is briefly away. */
async function withRetries<T>(what: string, step: () => Promise<T>, attempts = 6): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (attempt >= attempts) throw err;
      logger.warn("dedupe", `${what} failed, retrying`, { attempt, error: errorMessage(err) });
      await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
    }
  }
}

function existingFile(path: string): string | undefined {
  return existsSync(path) ? path : undefined;
}
