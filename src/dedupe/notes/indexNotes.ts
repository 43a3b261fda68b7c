import { randomUUID } from "node:crypto";
import type { CaptureHistory } from "../captureHistory.js";
import { captureCounts, captureKind } from "../captureRule.js";
import type { DedupeIndex } from "../dedupeIndex.js";
import { warcDateToDigits } from "../../archive/warcDate.js";
import type { CaptureRecord, CountField } from "../indexKeys.js";

type Counts = Partial<Record<CountField, number>>;

/**
 * One index note for a record already in the WARC files, as plain data: it can be journaled to disk
 * while the index is away and applied later, by this process or by whoever packages its files.
 * `wacz` names the WACZ holding the record; its index in c:<crawlId>:wacz is resolved when applied.
 */
export type IndexNote =
  | { kind: "response"; id: string; wacz: string; digest: string; date: string; url: string; size: number; indexable: boolean; counts: Counts }
  | { kind: "revisit"; id: string; url: string; counts: Counts }
  | { kind: "history"; id: string; wacz: string; url: string; capture: Omit<CaptureRecord, "waczIndex"> }
  | { kind: "outlinks"; id: string; url: string; links: string[] };

/** A written record as the notes need it: WARC-Type, target URL, WARC-Date as written, record length, WARC-Record-ID. */
export interface WrittenRecordFacts {
  warcType: string;
  url: string;
  date: string;
  length: number;
  /**
   * A response's or revisit's note is known by its record's WARC-Record-ID: a note made again from the
   * record (recordNotes.ts, for records of a crawler that died before noting them) is then counted once.
   */
  recordId: string;
}

/** Index a written response (its hash entry, if indexable) and count it. */
export function responseNote(digest: string, record: WrittenRecordFacts, wacz: string, indexable: boolean): IndexNote {
  return {
    kind: "response", id: record.recordId, wacz, digest, date: warcDateToDigits(record.date), url: record.url, size: record.length, indexable,
    counts: captureCounts(captureKind(record.warcType, record.url)),
  };
}

/** Count a written revisit of an original `originalSize` bytes long. */
export function revisitNote(record: WrittenRecordFacts, originalSize: number): IndexNote {
  return { kind: "revisit", id: record.recordId, url: record.url, counts: captureCounts(captureKind(record.warcType, record.url), originalSize - record.length) };
}

export function historyNote(url: string, wacz: string, capture: Omit<CaptureRecord, "waczIndex">): IndexNote {
  return { kind: "history", id: randomUUID(), wacz, url, capture };
}

export function outlinksNote(url: string, links: string[]): IndexNote {
  return { kind: "outlinks", id: randomUUID(), url, links };
}

export function describeNote(note: IndexNote): string {
  switch (note.kind) {
    case "response": return `index ${note.url}`;
    case "revisit": return `count the revisit of ${note.url}`;
    case "history": return `record ${note.url} in the capture history`;
    case "outlinks": return `record the outlinks of ${note.url}`;
  }
}

/** Whether a parsed journal line is a note (a line from another version or a torn write is not). */
export function isIndexNote(value: unknown): value is IndexNote {
  const note = value as Partial<IndexNote> | null;
  return typeof note === "object" && note !== null && typeof note.id === "string" && typeof note.url === "string"
    && ["response", "revisit", "history", "outlinks"].includes(note.kind as string);
}

/**
 * Writes notes into the dedupe index. Each write is idempotent when `once` is set (a replayed note):
 * hash entries (HSETNX), history (newest wins) and outlinks (HSET) are by nature, and counts are added
 * together with the note's id in one script, so a note applied before a crash is not counted again.
 */
export class IndexNoteWriter {
  constructor(
    private readonly index: DedupeIndex,
    private readonly history: CaptureHistory,
    /** The index in c:<crawlId>:wacz of a WACZ of this writer (registering it; throws while the index is away). */
    private readonly waczIndex: (waczFilename: string) => Promise<number>,
  ) {}

  async apply(note: IndexNote, once: boolean): Promise<void> {
    const countOnce = once ? note.id : undefined;
    switch (note.kind) {
      case "response": {
        const waczIndex = await this.waczIndex(note.wacz);
        if (note.indexable) await this.index.addOriginal(note.digest, { waczIndex, date: note.date, url: note.url, size: note.size });
        await this.index.addCounts(note.counts, countOnce);
        return;
      }
      case "revisit":
        await this.index.addCounts(note.counts, countOnce);
        return;
      case "history":
        await this.history.recordCapture(note.url, { ...note.capture, waczIndex: await this.waczIndex(note.wacz) });
        return;
      case "outlinks":
        await this.history.recordOutlinks(note.url, note.links);
        return;
    }
  }
}
