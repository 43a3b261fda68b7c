import { basename } from "node:path";
import { warcDateToDigits } from "../../archive/warcDate.js";
import { logger } from "../../log/logger.js";
import { iterCdxjLines, parseCdxjLine, type CdxjRecord } from "../../wacz/index.js";
import { captureCounts, captureKind, cdxWarcType, EMPTY_PAYLOAD_DIGEST, isIndexablePayload, type CaptureKind } from "../captureRule.js";
import type { DedupeIndex } from "../dedupeIndex.js";
import type { IndexNote, IndexNoteWriter } from "./indexNotes.js";

/** Records whose notes are asked for in one round trip. */
const BATCH = 500;
const RECORD_ID = "WARC-Record-ID";
const WARC_DATE = "WARC-Date";
const TRUNCATED = "WARC-Truncated";

/**
 * A crawler killed between writing a record and noting it (in the index or its journal) leaves a record
 * the index does not count: the archive and the index then disagree, and a rebuild by the indexer would
 * give other counts. Whoever takes over that crawler's WARC files (a survivor packaging them, or the
 * same command run again) makes the missing notes from the records themselves, before packaging: each
 * response and revisit whose WARC-Record-ID is not among the crawl's applied notes is indexed and counted
 * as the pipeline would have (responseNote, revisitNote), once (the note id is the record id).
 * Returns how many records were noted.
 */
export async function noteUnnotedRecords(
  warcPaths: string[],
  waczOf: (warcFilename: string) => string,
  index: DedupeIndex,
  notes: IndexNoteWriter,
): Promise<number> {
  let noted = 0;
  let batch: Capture[] = [];
  const flush = async () => {
    const missing = new Set(await index.unappliedNotes(batch.map((c) => c.id)));
    for (const capture of batch.filter((c) => missing.has(c.id))) {
      await notes.apply(await noteOf(capture, waczOf, index), true);
      noted += 1;
    }
    batch = [];
  };
  for await (const line of iterCdxjLines(warcPaths, { warcFields: [RECORD_ID, WARC_DATE, TRUNCATED] })) {
    const record = parseCdxjLine(line);
    const kind = captureKind(cdxWarcType(record.mime, record.status), record.url);
    const id = record[RECORD_ID];
    if (!kind || typeof id !== "string") continue;
    batch.push({ record, kind, id });
    if (batch.length >= BATCH) await flush();
  }
  if (batch.length) await flush();
  if (noted) logger.warn("dedupe", "indexed records a crawler that died had written but not yet noted in the index", { records: noted, warcFiles: warcPaths.map((p) => basename(p)) });
  return noted;
}

/** A response or revisit read from a WARC file: its CDXJ line, what it counts as, its WARC-Record-ID. */
interface Capture {
  record: CdxjRecord;
  kind: CaptureKind;
  id: string;
}

/** The note the pipeline makes for a written response or revisit, made from its CDXJ line. */
async function noteOf({ record, kind, id }: Capture, waczOf: (warcFilename: string) => string, index: DedupeIndex): Promise<IndexNote> {
  const digest = record.digest ? `sha256:${record.digest}` : EMPTY_PAYLOAD_DIGEST;
  const length = Number(record.length ?? 0);
  if (kind === "revisit") {
    const original = await index.lookup(digest);
    return { kind: "revisit", id, url: record.url, counts: captureCounts(kind, original ? original.size - length : 0) };
  }
  const indexable = record[TRUNCATED] === undefined && isIndexablePayload(Number(record.status), digest === EMPTY_PAYLOAD_DIGEST);
  return {
    kind: "response", id, wacz: waczOf(String(record.filename)), digest, url: record.url, size: length, indexable,
    date: warcDateToDigits(String(record[WARC_DATE] ?? "")), counts: captureCounts(kind),
  };
}
