// Whether every revisit of a replay set resolves to a response, as replay tools resolve it: the revisit's
// WARC-Refers-To-Target-URI and WARC-Refers-To-Date name a response record of some WACZ of the set, by exact
// URL and by date to the second (the precision of a CDXJ timestamp). A revisit naming another revisit is
// unresolved too: replay tools do not follow chains.
//
// Two passes over the members' CDXJ indexes keep memory to one key per response (about its URL's length
// plus 40 bytes) and one batch of revisits: the first learns every response (URL and timestamp are in the
// index), the second reads each revisit's WARC headers from its WARC file by byte range (the index does not
// carry the refers-to fields).
import { constants as zlibConstants, gunzipSync } from "node:zlib";
import { AsyncIterReader, WARCParser, type WARCRecord } from "warcio";
import { parseCdxjLine, WaczIndexError, type CdxjRecord } from "../wacz/index.js";
import { iterWaczCdxj, iterWaczCdxjRecordBatches, openWacz, WaczReadError, type WaczReader } from "../wacz/reader/index.js";
import type { SetMember, UnresolvedRevisit } from "./waczSet.js";

type CheckedMember = Pick<SetMember, "name" | "path">;

/** Revisits whose headers are read before they are checked: bounds what one member's pass holds. */
const REVISIT_BATCH = 1024;
/** Stretches of a batch read at once (local files: enough to keep the thread pool's reads going). */
const PARALLEL_READS = 4;
const REVISIT_MIME = "warc/revisit";

/**
 * The revisits of the set that resolve to no response record of the set: their target is missing, at
 * another second, itself a revisit or another record than a response. In member order, then index order.
 * A revisit without WARC-Refers-To fields resolves to nothing and is listed with them empty. Throws
 * WaczReadError or WaczIndexError for a member that cannot be read, or whose index lists a revisit where
 * its WARC file holds none.
 */
export async function unresolvedRevisits(members: readonly CheckedMember[]): Promise<UnresolvedRevisit[]> {
  const responses = new Set<string>();
  for (const member of members) await withReader(member, (reader) => addResponses(reader, responses));
  const unresolved: UnresolvedRevisit[] = [];
  for (const member of members) {
    await withReader(member, async (reader) => {
      for await (const batch of revisitBatches(reader)) {
        for (const revisit of await readRevisits(reader, member.name, batch)) {
          if (!responses.has(captureKey(revisit.refersToUrl, cdxTimestamp(revisit.refersToDate)))) unresolved.push(keptRevisit(revisit));
        }
      }
    });
  }
  return unresolved;
}

async function withReader(member: CheckedMember, use: (reader: WaczReader) => Promise<void>): Promise<void> {
  const reader = await openWacz(member.path);
  try {
    await use(reader);
  } finally {
    await reader.close();
  }
}

/** "<url> <14-digit timestamp>": how a revisit's target and a response are matched. */
function captureKey(url: string, timestamp: string): string {
  return `${url} ${timestamp}`;
}

/**
 * The string with nothing else behind it. A string cut from a longer one (a field of a CDXJ line, a header
 * of a record's header block) keeps the whole of that alive: kept as a response's key, a CDXJ line of a few
 * hundred bytes each, where a set may hold millions. utf16le keeps every code unit, lone surrogates too.
 */
function ownCopy(text: string): string {
  return Buffer.from(text, "utf16le").toString("utf16le");
}

/** An unresolved revisit as listed: its fields are cut from its record's header block. */
function keptRevisit(revisit: UnresolvedRevisit): UnresolvedRevisit {
  return {
    wacz: revisit.wacz,
    url: ownCopy(revisit.url),
    date: ownCopy(revisit.date),
    refersToUrl: ownCopy(revisit.refersToUrl),
    refersToDate: ownCopy(revisit.refersToDate),
  };
}

/** A WARC date as the CDXJ timestamp of its record: warcio's indexer's digits, cut to the second. */
function cdxTimestamp(warcDate: string): string {
  return warcDate.replace(/[-:T]/g, "").slice(0, 14);
}

/**
 * Only response records: warcio's indexer (ours, browsertrix-crawler's) gives a status to response and
 * revisit records alone ("-" is CDX's empty field); a resource record is no revisit's original.
 */
function isResponse(record: CdxjRecord): boolean {
  return record.mime !== REVISIT_MIME && record.status !== undefined && record.status !== "-";
}

async function addResponses(reader: WaczReader, responses: Set<string>): Promise<void> {
  for await (const records of iterWaczCdxjRecordBatches(reader)) {
    for (const record of records) if (isResponse(record)) responses.add(ownCopy(captureKey(record.url, record.timestamp.slice(0, 14))));
  }
}

/** Where a revisit listed by the index is: its WARC file (as named under archive/) and its gzip member. */
interface RevisitLocation {
  filename: string;
  offset: number;
  length: number;
}

function revisitLocation(reader: WaczReader, record: CdxjRecord): RevisitLocation {
  const offset = Number(record.offset);
  const length = Number(record.length);
  if (!record.filename || record.offset === undefined || record.length === undefined || !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length <= 0) {
    throw new WaczIndexError(`${reader.location}: the index lists the revisit of ${record.url} at ${record.timestamp} without a filename, offset and length`);
  }
  return { filename: record.filename, offset, length };
}

/** The index's revisits, REVISIT_BATCH at a time, in index order. */
async function* revisitBatches(reader: WaczReader): AsyncGenerator<RevisitLocation[]> {
  let batch: RevisitLocation[] = [];
  for await (const line of iterWaczCdxj(reader)) {
    // Only lines that may be revisits are parsed again (the reader parsed them once, for the fields it keeps):
    // a revisit's mime, however escaped in JSON, leaves "revisit" in the line.
    if (!line.includes("revisit")) continue;
    const record = parseCdxjLine(line);
    if (record.mime !== REVISIT_MIME) continue;
    batch.push(revisitLocation(reader, record));
    if (batch.length === REVISIT_BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/**
 * The bytes of a revisit record its WARC headers are read from: a revisit holds headers only (WARC and
 * HTTP), and one listed longer is cut here so one odd record cannot fill memory.
 */
const HEAD_BYTES = 64 * 1024;
/** What one headers-only revisit record may inflate to, at most: past it, the record is no revisit we can read. */
const MAX_HEAD_INFLATED = 1024 * 1024;
/**
 * The output buffer zlib takes per record: a revisit's headers inflate to a few KiB, and at zlib's default
 * (16 KiB) these buffers, one per revisit, were most of what the check allocated.
 */
const INFLATE_CHUNK_BYTES = 4 * 1024;
/** Records this close together in a WARC file are read in one stretch: cheaper than a read each. */
const MAX_GAP_BYTES = 64 * 1024;
/** The longest stretch read at once (one record's head may make one longer than this alone: HEAD_BYTES). */
const STRETCH_BYTES = 1024 * 1024;

/** One read of a WARC file covering the heads of some of a batch's revisits. */
interface Stretch {
  filename: string;
  start: number;
  end: number;
  /** Positions in the batch of the revisits it covers. */
  revisits: number[];
}

/** Where a revisit's head ends: its record, cut at HEAD_BYTES. */
function headEnd(location: RevisitLocation): number {
  return location.offset + Math.min(location.length, HEAD_BYTES);
}

/** The batch's revisits grouped into stretches of their WARC files, in file order. */
function stretchesOf(batch: readonly RevisitLocation[]): Stretch[] {
  const order = batch.map((_, i) => i).sort((a, b) => byPlace(batch[a]!, batch[b]!));
  const stretches: Stretch[] = [];
  let current: Stretch | undefined;
  for (const at of order) {
    const location = batch[at]!;
    const end = headEnd(location);
    const joins = current?.filename === location.filename && location.offset - current.end <= MAX_GAP_BYTES && end - current.start <= STRETCH_BYTES;
    if (current && joins) {
      current.end = Math.max(current.end, end);
      current.revisits.push(at);
    } else {
      current = { filename: location.filename, start: location.offset, end, revisits: [at] };
      stretches.push(current);
    }
  }
  return stretches;
}

function byPlace(a: RevisitLocation, b: RevisitLocation): number {
  if (a.filename !== b.filename) return a.filename < b.filename ? -1 : 1;
  return a.offset - b.offset;
}

/** The revisits' own and refers-to fields, from their WARC headers, in the batch's order. */
async function readRevisits(reader: WaczReader, wacz: string, batch: readonly RevisitLocation[]): Promise<UnresolvedRevisit[]> {
  const revisits = new Array<UnresolvedRevisit>(batch.length);
  const stretches = stretchesOf(batch);
  let next = 0;
  const readNext = async (): Promise<void> => {
    while (next < stretches.length) {
      const stretch = stretches[next++]!;
      const bytes = await readStretch(reader, stretch);
      for (const at of stretch.revisits) {
        const location = batch[at]!;
        const head = bytes.subarray(location.offset - stretch.start, headEnd(location) - stretch.start);
        revisits[at] = revisitOf(wacz, await revisitHeaders(head, `${reader.location}: archive/${location.filename} at offset ${location.offset}`));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_READS, stretches.length) }, readNext));
  return revisits;
}

async function readStretch(reader: WaczReader, stretch: Stretch): Promise<Buffer> {
  const stream = await reader.openEntryStream(`archive/${stretch.filename}`, { start: stretch.start, end: stretch.end });
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  if (bytes.length !== stretch.end - stretch.start) {
    throw new WaczReadError(`${reader.location}: archive/${stretch.filename} ends before byte ${stretch.end}`);
  }
  return bytes;
}

/**
 * The WARC headers of the record whose first bytes `head` holds (a gzip member, or a record of an
 * uncompressed WARC file), parsed by warcio. A member is inflated here: node's zlib costs less CPU than
 * warcio's own inflater, set up anew for each record.
 */
async function revisitHeaders(head: Buffer, where: string): Promise<WARCRecord> {
  let record: WARCRecord | null;
  try {
    const isGzip = head[0] === 0x1f && head[1] === 0x8b;
    // The head may end inside the member: take what inflates of it, the headers come first.
    const text = isGzip ? gunzipSync(head, { finishFlush: zlibConstants.Z_SYNC_FLUSH, maxOutputLength: MAX_HEAD_INFLATED, chunkSize: INFLATE_CHUNK_BYTES }) : head;
    // Headers cut short would read as a revisit without its refers-to fields.
    if (text.indexOf("\r\n\r\n") < 0) throw new Error(`its WARC headers do not end within its first ${HEAD_BYTES} bytes`);
    record = await new WARCParser(new AsyncIterReader([text], null), { parseHttp: false }).parse();
  } catch (err) {
    throw new WaczReadError(`${where}: not a readable WARC record (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!record) throw new WaczReadError(`${where}: no WARC record there`);
  if (record.warcType !== "revisit") throw new WaczReadError(`${where}: the index lists a revisit, the record is ${record.warcType ?? "untyped"}`);
  return record;
}

function revisitOf(wacz: string, record: WARCRecord): UnresolvedRevisit {
  return {
    wacz,
    url: record.warcTargetURI ?? "",
    date: record.warcDate ?? "",
    refersToUrl: withoutAngleBrackets(record.warcRefersToTargetURI ?? ""),
    refersToDate: record.warcRefersToDate ?? "",
  };
}

/** WARC/1.0 examples wrote URIs as <uri>; warcio unwraps WARC-Target-URI (so the index's url) the same way. */
function withoutAngleBrackets(uri: string): string {
  return uri.startsWith("<") && uri.endsWith(">") ? uri.slice(1, -1) : uri;
}
