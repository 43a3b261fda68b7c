import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { combineWarcFiles } from "../archive/combineWarcs.js";
import { openMarkerName } from "../archive/warcWriter.js";
import { logger } from "../log/logger.js";
import { warcinfoFields } from "../pipeline/openPipeline.js";
import { writeCdxjIndex } from "../wacz/generateCdx.js";
import type { CrawlRun } from "./crawlRun.js";

/** browsertrix-crawler's --generateCDX output, in the collection folder. */
export const CDXJ_INDEX_PATH = join("indexes", "index.cdxj");

/**
 * What --combineWARC and --generateCDX make of the crawl's WARC files once every process on it has
 * finished: combined WARC files and a CDXJ index in the collection folder (browsertrix-crawler's names).
 * Both cover every WARC file of the archive folder, earlier runs of a resumed crawl included.
 */
export async function writeCollectionFiles({ options, paths }: Pick<CrawlRun, "options" | "paths">): Promise<void> {
  const { combineWARC, generateCDX } = options.output;
  if (!combineWARC && !generateCDX) return;
  const names = readdirSync(paths.archive).filter((f) => f.endsWith(".warc.gz")).sort();
  // A file still marked open belongs to a writer that died unrepaired: it may end mid-record.
  const open = names.filter((f) => existsSync(join(paths.archive, openMarkerName(f))));
  if (open.length) logger.warn("crawl", "WARC files left unfinished by a crawler process that died are left out of the combined WARC and the CDXJ index", { files: open });
  const warcFiles = names.filter((f) => !open.includes(f)).map((f) => join(paths.archive, f));
  if (combineWARC) {
    const combined = await combineWarcFiles({
      warcFiles, outputDir: paths.root, collection: options.collection, rolloverSize: options.rolloverSize, warcinfo: warcinfoFields(options),
    });
    logger.milestone("crawl", "combined WARC files written", { files: combined.map((f) => join(paths.root, f)), warcFiles: warcFiles.length });
  }
  if (generateCDX) {
    const path = join(paths.root, CDXJ_INDEX_PATH);
    const lines = await writeCdxjIndex(warcFiles, path, paths.root);
    logger.milestone("crawl", "CDXJ index written", { path, lines });
  }
}
