import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { Cluster, Redis } from "ioredis";
import type { CrawlOptions } from "../config/crawlOptions.js";
import type { DedupeIndex } from "../dedupe/dedupeIndex.js";
import type { DependencyTracker } from "../dedupe/dependencies.js";
import { commitCrawl } from "../dedupe/commit.js";
import { CaptureHistory } from "../dedupe/captureHistory.js";
import { IndexNoteWriter } from "../dedupe/notes/indexNotes.js";
import { NoteBacklog } from "../dedupe/notes/noteBacklog.js";
import { noteJournalPath } from "../dedupe/notes/noteJournal.js";
import { noteUnnotedRecords } from "../dedupe/notes/recordNotes.js";
import { withDedupeRetries } from "../dedupe/retry.js";
import { errorMessage, logger } from "../log/logger.js";
import { repairAbandonedWarcs } from "../pipeline/openPipeline.js";
import { WaczPlan } from "../pipeline/waczPlan.js";
import type { LeaseHolders, Membership } from "../state/membership/membership.js";
import { writerName, type UnreachableWriter, type WriterSlots } from "../state/membership/writerSlots.js";
import { writeWacz, type WaczResult } from "../wacz/index.js";
import { waczSigner } from "../upload/waczSigning.js";
import { SOFTWARE } from "../version.js";
import { filterPagesFile, type PageList } from "../reports/pageList.js";

/** A WARC file assigned to a WACZ is gone: packaging without it would silently leave its records out. */
export class MissingWarcError extends Error {}

export interface PackagingContext {
  options: CrawlOptions;
  archiveDir: string;
  outputDir: string;
  plan: WaczPlan;
  pageList: PageList;
  dedupe: DedupeIndex;
  dependencies: DependencyTracker;
  /** For each page URL, the WACZ whose pages list keeps it ("" for any: a page crawled before this was kept). */
  listedIn: (urls: string[]) => Promise<(string | null)[]>;
  /** reports/changes.jsonl of this writer, packaged when it exists. */
  reportFile: string;
  /** --reportSkipped: reports/skippedPages.jsonl of this writer, packaged when given (as browsertrix-crawler does). */
  skippedReportFile?: string;
  /** --blockRules / --blockAds: reports/blocked.jsonl of this writer, packaged when given. */
  blockedReportFile?: string;
  /** reports/seeds.jsonl of this writer (each seed's pages, bytes, end), packaged when given (a crawl with budgets). */
  seedsReportFile?: string;
  /** --captureMode hybrid: reports/capture.jsonl of this writer, packaged when given. */
  captureReportFile?: string;
  /**
   * Throws once this process was taken for dead (fenced): then another may be packaging the same files,
   * and this one must neither replace a WACZ nor complete its index entry.
   */
  assertOwner?: () => Promise<void>;
}

/**
 * Package each of this writer's WACZ files (in order, so a later one can depend on an earlier one),
 * with its own pages and its own relation.requires, then complete its c:<crawlId>:wacz entry.
 */
export async function packageWaczFiles(context: PackagingContext): Promise<WaczResult[]> {
  const { options, plan, pageList, dedupe, dependencies } = context;
  const results: WaczResult[] = [];
  const required = new Set<string>();
  for (const group of await plan.groups()) {
    const outputPath = join(context.outputDir, group.filename);
    if ((await plan.isSealed(group.filename)) && existsSync(outputPath)) {
      // Packaged before this writer was restarted: rewriting it would change the hash others require.
      const entry = (await withDedupeRetries("read the WACZ list", () => dedupe.waczEntries()))[group.index];
      if (entry?.hash && entry.size !== undefined) {
        logger.info("wacz", "WACZ packaged before: kept as it is", { path: outputPath, hash: entry.hash });
        results.push({ path: outputPath, filename: group.filename, hash: entry.hash, size: entry.size, cdxLines: 0 });
        continue;
      }
    }
    // A WARC file whose first record could not be written is removed and unassigned by the writer: any
    // other assigned file that is gone held records the index and other WACZ files may point at.
    const missing = group.warcFiles.filter((f) => !existsSync(join(context.archiveDir, f)));
    if (missing.length) throw new MissingWarcError(`WARC files of ${group.filename} are not in ${context.archiveDir}: ${missing.join(", ")}`);
    const warcFiles = group.warcFiles.map((f) => join(context.archiveDir, f));
    if (!warcFiles.length) continue;
    const pages = await keptPages(pageList.files(group.filename), group.filename, outputPath, context.listedIn);
    const requires = await withDedupeRetries("read the dependencies", () => dependencies.requirementsOf(group, dedupe));
    const result = await writeWacz({
      outputPath,
      warcFiles,
      // Either list may not exist (no seed page in this WACZ, or no page besides the seeds).
      pagesFile: pages.pagesFile,
      extraPagesFile: pages.extraPagesFile,
      extraEntries: reportEntries(context),
      software: SOFTWARE,
      title: options.title ?? undefined,
      description: options.description ?? undefined,
      requires,
      beforeRename: context.assertOwner,
      sign: options.output.waczSigning ? waczSigner(options.output.waczSigning) : undefined,
      // Scratch (sorted runs of a big index) on the collection's disk, not in a small system /tmp.
      tmpDir: context.outputDir,
    });
    await pages.remove();
    await context.assertOwner?.();
    await withDedupeRetries(`complete the index entry of ${group.filename}`, () =>
      dedupe.finishWacz(group.index, { filename: group.filename, hash: result.hash, size: result.size }),
    );
    await plan.seal(group.filename);
    logger.milestone("wacz", "WACZ written", {
      path: result.path, size: result.size, hash: result.hash, cdxLines: result.cdxLines, waczIndex: group.index,
      requires: requires.map((r) => r.filename),
    });
    for (const r of requires) required.add(r.filename);
    results.push(result);
  }
  if (required.size) {
    // A deduplicated crawl replays only with the WACZ files its revisits point into: say which, and how to open them together.
    logger.milestone("wacz", "this crawl's WACZ files require other WACZ files to replay: `replay` opens them together", {
      requires: [...required].sort(), replay: `replay ${shellQuoted(context.outputDir)}`,
    });
  }
  return results;
}

const shellQuoted = (path: string): string => (/^[\w./-]+$/.test(path) ? path : `'${path.replace(/'/g, "'\\''")}'`);

/** The reports packaged under reports/ in the WACZ: those that exist. */
function reportEntries(context: PackagingContext): { zipPath: string; sourcePath: string }[] {
  const reports = [{ zipPath: "reports/changes.jsonl", sourcePath: context.reportFile }];
  if (context.skippedReportFile) reports.push({ zipPath: "reports/skippedPages.jsonl", sourcePath: context.skippedReportFile });
  if (context.blockedReportFile) reports.push({ zipPath: "reports/blocked.jsonl", sourcePath: context.blockedReportFile });
  if (context.seedsReportFile) reports.push({ zipPath: "reports/seeds.jsonl", sourcePath: context.seedsReportFile });
  if (context.captureReportFile) reports.push({ zipPath: "reports/capture.jsonl", sourcePath: context.captureReportFile });
  return reports.filter((r) => existsSync(r.sourcePath));
}

/** What packaging the files of dead writers takes, besides the packaging of this writer's own. */
export interface OrphanPackaging {
  packaging: Omit<PackagingContext, "plan">;
  stateRedis: Redis | Cluster;
  membership: Membership;
  /** The frontier: who holds its leases. */
  frontier: LeaseHolders;
  slots: WriterSlots;
}

/**
 * Package the files of writers that died before packaging (their heartbeat expires within ~15 s, so wait
 * that long for slots whose owner may be gone but not yet known to be). Only files in this process's
 * archive folder can be packaged here; a dead writer of another folder must be run again to package its
 * own, and until then the crawl is not committed (its records would otherwise be silently left out).
 */
export async function packageOrphans({ packaging, stateRedis, membership, frontier, slots }: OrphanPackaging): Promise<string[]> {
  const { options } = packaging;
  const paths: string[] = [];
  const deadline = Date.now() + 20_000;
  let unreachable: UnreachableWriter[] = [];
  while (!(await slots.allPackaged()) && Date.now() < deadline) {
    await membership.reapLocalDeadProcesses(frontier);
    const adoption = await slots.adoptOrphan();
    unreachable = adoption.unreachable;
    if (adoption.slot === null) {
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    logger.info("crawl", "packaging the files of a crawler process that died", { writer: adoption.slot });
    await repairAbandonedWarcs(packaging.archiveDir, membership);
    const plan = new WaczPlan(stateRedis, membership.keys, packaging.dedupe, { collection: options.collection, rolloverSize: options.rolloverSize, writer: writerName(adoption.slot) });
    // The index notes it journaled while the index was away go in first (its files are committed with this crawl).
    await replayJournal(packaging, plan, writerName(adoption.slot));
    // Then what it wrote and was killed before noting.
    await noteRecordsOfDeadWriter(packaging, plan);
    if (options.generateWACZ) {
      paths.push(...(await packageWaczFiles({ ...packaging, plan })).map((r) => r.path));
    }
    await slots.markPackaged(adoption.slot);
  }
  for (const writer of unreachable) {
    logger.error("crawl", "a crawler process died before packaging its WACZ files, which are not in this archive folder: run that crawler again (the same command, on that machine) to package them; the crawl is committed then", {
      writer: writer.slot, home: writer.home, warcFiles: writer.missingWarcs.length,
    });
  }
  return paths;
}

/** Write every index note a writer journaled (idempotent: a note written before is not counted again), then remove its journal. */
async function replayJournal(packaging: Omit<PackagingContext, "plan">, plan: WaczPlan, writer: string): Promise<void> {
  await NoteBacklog.replay(noteJournalPath(packaging.archiveDir, writer), noteWriterFor(packaging.dedupe, plan));
}

/** Writes the index notes of the records in a writer's WACZ files (their index resolved through its plan). */
function noteWriterFor(dedupe: DedupeIndex, plan: WaczPlan): IndexNoteWriter {
  return new IndexNoteWriter(dedupe, new CaptureHistory(dedupe.redis, dedupe.crawlId), (wacz) => plan.registeredIndex(wacz));
}

/**
 * A writer killed between writing a record and noting it left that record out of the index: before its
 * files are packaged, every record of its unpackaged WARC files that has no note is noted (once: see
 * recordNotes.ts). For the files of a dead writer taken over, and for a writer's own after a run of it was killed.
 */
export async function noteRecordsOfDeadWriter(packaging: Pick<PackagingContext, "dedupe" | "archiveDir">, plan: WaczPlan): Promise<void> {
  const { dedupe, archiveDir } = packaging;
  const waczOfWarc = new Map<string, string>();
  for (const group of await plan.groups()) {
    if (!(await plan.isSealed(group.filename))) for (const warc of group.warcFiles) waczOfWarc.set(warc, group.filename);
  }
  const paths = [...waczOfWarc.keys()].map((f) => join(archiveDir, f)).filter((p) => existsSync(p));
  const notes = noteWriterFor(dedupe, plan);
  await withDedupeRetries("index the records a crawler that died had not noted", () =>
    noteUnnotedRecords(paths, (warc) => waczOfWarc.get(warc) ?? plan.waczFilenameOf(warc), dedupe, notes),
  );
}

/** Commit a finished crawl to the merged dedupe index; on failure it stays uncommitted (and says how to finish). */
export async function commitFinishedCrawl(dedupe: DedupeIndex): Promise<boolean> {
  try {
    const result = await withDedupeRetries("commit", () => commitCrawl(dedupe.redis, dedupe.crawlId));
    logger.milestone("dedupe", result.committed ? "crawl committed to the dedupe index" : "crawl was already committed", { ...result });
    return true;
  } catch (err) {
    logger.error("dedupe", `crawl not committed: ${errorMessage(err)}; run: indexer --redisDedupeUrl URL --commitCrawlId ${dedupe.crawlId}`);
    return false;
  }
}

/**
 * This WACZ's pages lists as packaged: each page once, and only the pages this WACZ keeps (the process
 * that finished a page names the WACZ listing it), copied beside the WACZ while it is written.
 */
async function keptPages(
  lists: { pagesFile: string; extraPagesFile: string },
  wacz: string,
  outputPath: string,
  listedIn: PackagingContext["listedIn"],
): Promise<{ pagesFile?: string; extraPagesFile?: string; remove: () => Promise<void> }> {
  const keep = async (urls: string[]) => (await withDedupeRetries("read which pages this WACZ lists", () => listedIn(urls))).map((w) => w === wacz || w === "");
  const kept: { pagesFile?: string; extraPagesFile?: string } = {};
  for (const [name, source] of [["pagesFile", lists.pagesFile], ["extraPagesFile", lists.extraPagesFile]] as const) {
    if (!existsSync(source)) continue;
    const copy = `${outputPath}.${name}.jsonl`;
    const dropped = await filterPagesFile(source, copy, keep);
    if (dropped) logger.info("wacz", "pages listed by a process that lost them, or twice, left out of this WACZ's list", { wacz, list: name, dropped });
    kept[name] = copy;
  }
  return { ...kept, remove: async () => void (await Promise.all(Object.values(kept).map((f) => rm(f, { force: true })))) };
}
