import type { Cluster, Redis } from "ioredis";
import { repairUnfinishedWarcs } from "../archive/warcRepair.js";
import { WarcWriter } from "../archive/warcWriter.js";
import { CaptureHistory } from "../dedupe/captureHistory.js";
import type { DedupeIndex } from "../dedupe/dedupeIndex.js";
import { Deduplicator } from "../dedupe/deduplicator.js";
import { DependencyTracker } from "../dedupe/dependencies.js";
import { NoteBacklog } from "../dedupe/notes/noteBacklog.js";
import { IndexNoteWriter } from "../dedupe/notes/indexNotes.js";
import { noteJournalPath } from "../dedupe/notes/noteJournal.js";
import { errorMessage, logger } from "../log/logger.js";
import { ExchangeClaims } from "../state/exchangeClaims.js";
import type { Liveness } from "../state/membership/fencing.js";
import type { Membership } from "../state/membership/membership.js";
import { localityTag, parseProcessId } from "../ownership/processIdentity.js";
import { isStorageError, storageErrorMessage } from "../util/storageErrors.js";
import { testSeams } from "../util/testSeams.js";
import { SOFTWARE } from "../version.js";
import { CapturePipeline, type PipelineEvents } from "./capturePipeline.js";
import { PageResourceRecorder } from "./pageResources.js";
import { WaczPlan } from "./waczPlan.js";

export interface PipelineSettings {
  crawlId: string;
  collection: string;
  title: string | null;
  /** Bytes: a new WARC file, and a new WACZ, past this size. */
  rolloverSize: number;
  /** Payloads smaller than this are always stored in full. */
  dedupeMinSize: number;
  /** WARC files are named `<warcPrefix>-<crawlId>-...` (default rec); warcInfo fields go into each one's warcinfo record. */
  output?: { warcPrefix: string; warcInfo: Record<string, string> };
}

export interface PipelineInputs {
  settings: PipelineSettings;
  stateRedis: Redis | Cluster;
  dedupe: DedupeIndex;
  membership: Membership;
  /** This process writes only while its heartbeat is surely in force (and never once fenced). */
  liveness: Liveness;
  /** This process's writer slot name ("main", "w1"...): its WACZ files are named after it. */
  writer: string;
  archiveDir: string;
  stop: { fatal(message: string, cause?: unknown): void };
  /** Told what was written (--metricsPort); null: nobody asks. */
  events?: PipelineEvents | null;
}

/** The capture pipeline of one writer, and the parts the rest of the crawl reads from. */
export interface OpenPipeline {
  /** Where every captured exchange goes. */
  sink: CapturePipeline;
  /** Pages' text and screenshots, as resource records beside the pages' traffic. */
  pageResources: PageResourceRecorder;
  writer: WarcWriter;
  plan: WaczPlan;
  dependencies: DependencyTracker;
  history: CaptureHistory;
  /** Index notes waiting for the dedupe index (settled before packaging and commit). */
  notes: NoteBacklog;
  /** Finish pending writes and close the current WARC file (before packaging). */
  close(): Promise<void>;
  /**
   * WARC files (of any writer) found cut off at the start, their writer dead: if one is this writer's,
   * its previous run was killed and may have left records it never noted (see packaging.ts).
   */
  repairedAtStart: string[];
}

/**
 * Assemble the capture pipeline of this process's writer: WARC files (repairing those of writers that
 * died first), which WACZ each goes into, exchange claims, the dedupe decision, dependencies and history.
 */
export async function openCapturePipeline(inputs: PipelineInputs): Promise<OpenPipeline> {
  const { settings, stateRedis, dedupe, membership, liveness, archiveDir } = inputs;
  const plan = new WaczPlan(stateRedis, membership.keys, dedupe, { collection: settings.collection, rolloverSize: settings.rolloverSize, writer: inputs.writer });
  await plan.load();
  const repairedAtStart = await repairAbandonedWarcs(archiveDir, membership);
  const fileWriting = testSeams().fileWriting();

  const writer = new WarcWriter({
    dir: archiveDir,
    filenamePrefix: `${settings.output?.warcPrefix ?? "rec"}-${settings.crawlId}`,
    ...fileWriting,
    rolloverSize: settings.rolloverSize,
    owner: membership.processId,
    beforeWrite: () => liveness.assertLive(),
    warcinfo: warcinfoFields(settings),
    onFileOpened: async (filename) => void (await plan.assignWarc(filename)),
    onFileClosed: (filename, size) => plan.warcClosed(filename, size),
    // Its records stand; a disk that cannot sync or close a file will fail the next writes too: stop then.
    onCloseFailed: (filename, err) => {
      if (isStorageError(err)) inputs.stop.fatal(`cannot close ${filename} in ${archiveDir}: ${storageErrorMessage(err)}`, err);
      else logger.warn("writer", "a full WARC file could not be closed cleanly; its records stand", { filename, error: errorMessage(err) });
    },
    onFileDiscarded: (filename) => plan.unassignWarc(filename),
  });
  const dependencies = new DependencyTracker(stateRedis, membership.keys, settings.crawlId);
  const history = new CaptureHistory(dedupe.redis, settings.crawlId);
  // Notes a previous run of this writer journaled and could not write are resumed first, in order.
  const notes = await NoteBacklog.open(noteJournalPath(archiveDir, inputs.writer), new IndexNoteWriter(dedupe, history, (wacz) => plan.registeredIndex(wacz)), undefined, { syncLog: fileWriting.syncLog });
  const sink = new CapturePipeline({
    claims: new ExchangeClaims(stateRedis, membership),
    dedupe: new Deduplicator(dedupe, settings.dedupeMinSize, (filename) => plan.isOwnWacz(filename)),
    writer,
    plan,
    dependencies,
    history,
    notes,
    stop: inputs.stop,
    archiveDir,
    events: inputs.events ?? null,
  });
  return { sink, pageResources: new PageResourceRecorder(writer), writer, plan, dependencies, history, notes, close: () => writer.close(), repairedAtStart };
}

/** The fields of the warcinfo record each WARC file starts with (the combined ones of --combineWARC too). */
export function warcinfoFields(settings: PipelineSettings): Record<string, string> {
  return {
    software: SOFTWARE,
    format: "WARC File Format 1.1",
    conformsTo: "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
    "crawl-id": settings.crawlId,
    ...(settings.title ? { title: settings.title } : {}),
    // --warcInfo: the user's fields, which may replace ours (as browsertrix-crawler lets them).
    ...settings.output?.warcInfo,
  };
}

/**
 * WARC files cut short by a writer that died end at their last whole record again. A writer's files are
 * repaired only once it is fenced: should it be merely stalled, it will not write on.
 */
export async function repairAbandonedWarcs(archiveDir: string, membership: Membership): Promise<string[]> {
  const alive = async (owner: string) => !(await membership.fenceIfDead(owner));
  // A marker is exact while its writer's page cache is: same boot, same pid namespace (processIdentity.ts).
  const here = localityTag();
  const trustsMarker = (owner: string) => here !== null && parseProcessId(owner)?.locality === here;
  const repairedFiles = await repairUnfinishedWarcs(archiveDir, alive, trustsMarker);
  for (const repaired of repairedFiles) {
    logger.warn("writer", "repaired a WARC file left unfinished by a crawler that died", { ...repaired });
  }
  return repairedFiles.map((r) => r.filename);
}
