import { createHash } from "node:crypto";
import { warcDateToDigits } from "../archive/warcDate.js";

/**
 * The dedupe index's Redis layout and value formats: the one place they are defined
 * (see ../shared/reference/dedupe-architecture.md).
 *
 *   h:<crawlId>            hash   payload digest -> "<waczIndex> <date> <url> <size>"
 *   h:<crawlId>:counts     hash   totalCrawlSize, totalUrls, dupeUrls, conservedSize
 *   h:<crawlId>:notes      set    ids of index notes whose counts were added (a retry adds none twice); gone at commit
 *   c:<crawlId>:wacz       list   JSON {"filename"} placeholder, later {"filename","hash","size"}
 *   uncommittedcrawls      set    crawls being written, not used for lookups by other crawls (unless concurrent)
 *   concurrentcrawls       set    uncommitted crawls publishing their hashes into allhashes as they write them (--dedupeConcurrent)
 *   allcrawls              set    committed crawls
 *   allhashes              hash   payload digest -> crawlId (first committed crawl wins; a concurrent crawl's as written;
 *                                 among imported crawls the one first in crawlorder, whatever the import order)
 *   allcounts              hash   sums of committed crawls' counts, plus removedCrawls, removedCrawlSize
 *   crawlorder             hash   crawlId -> 1, 2, ...: imported crawls, those the latest manifest did not list first,
 *                                 then its crawls in its order; decides which crawl allhashes names for a payload
 *                                 several hold (a crawl not in it, committed by a crawler, comes first). Dense: a
 *                                 purge renumbers.
 *   purging                set    crawls being purged: written first, removed last, so any later run finishes the
 *                                 purge; lookups never answer with a crawl in it
 *   mergelease             string token of the process rebuilding allhashes (a purge); expires unless renewed.
 *                                 No commit completes while it is held
 *   mergeepoch             string counter, raised when a rebuild starts and when it has replaced allhashes: a
 *                                 commit whose merge ran across either is merged again
 *   allhashes:rebuild      hash   allhashes being rebuilt (renamed over allhashes when complete)
 *   allurls:rebuild        hash   allurls being rebuilt (same)
 *
 * Capture history (same two-level shape; used by --refresh and `history`):
 *   u:<crawlId>            hash   url -> JSON CaptureRecord: the crawl's latest capture (any status but 206 and unconfirmed 304),
 *                                 for a revisit with the response holding its payload
 *   o:<crawlId>            hash   page url -> JSON list of the page's outlinks
 *   allurls                hash   url -> crawlId of the latest committed capture of that url
 *
 * Import tracking (the indexer):
 *   src:q                  list   queued WACZ resources (JSON)
 *   src:qset               set    names of WACZ files ever queued (for updateProgress; whether to queue is decided by src:d)
 *   src:d                  set    names of WACZ files imported
 *   src:info               hash   name -> JSON {crawlId, requires: [crawlId...]} of each imported WACZ
 *   src:conserve           hash   name -> JSON {resource, waczIndex}: imported WACZ files with revisits whose
 *                                 conservedSize is not counted yet; counted once every queued WACZ is imported
 *                                 (the originals revisits point at are then all there, whatever the order)
 *   pending:q              hash   name -> JSON resource being imported now
 *   pending:lease:<name>   string the importer holding that entry ("<host>-<pid>-<run>:<take>"); expires if the
 *                                 importer dies, or is taken back at once by a run on that host that finds the pid gone
 *   updateProgress         string fraction of queued WACZ files imported
 *   last_update_ts         string when the last import run finished (ISO 8601)
 *
 * The sharded layout (any Redis Cluster; on one node only if chosen, see below) keeps every name above
 * behind the hash tag {dd} ("{dd}allcrawls", "{dd}c:<crawlId>:wacz", ...), so each script touching them
 * stays in one slot, and splits the two big hashes by the first hex digits of the digest (the shard):
 *   {<shard>}ah            hash   digest field -> crawlId                     (allhashes, one shard of it)
 *   {<shard>}h:<crawlId>   hash   digest field -> compact hash entry          (h:<crawlId>, one shard)
 *   {<shard>}ah:rebuild    hash   the shard of allhashes being rebuilt (renamed over {<shard>}ah)
 *   {dd}layout             string JSON {"layout":"sharded","prefixDigits":N,"format":2}: present = sharded layout
 * Fewer bytes per hash there (docs/user-guide/scaling.md), decoded where the index is read (shardedHashes.ts), so
 * callers see the same digests and "<waczIndex> <date> <url> <size>" values as in the single-node layout:
 * - digest field (digestField): a sha256 digest as its 32 raw bytes less the whole bytes its shard name
 *   already says (prefixDigits 4: 30 bytes, 3: 31); any other digest as its text, one space added when
 *   that text is at least as long as a raw field, so the length alone tells the two kinds apart.
 * - value (compactHashEntry): "<waczIndex> <mark><date> <url less its scheme> <size>", waczIndex still
 *   decimal and first (scripts match it), the date a base-36 count since 1970 in units of its own fraction
 *   digits, the size base 36; the one letter <mark> says how many fraction digits and which scheme
 *   (none, http://, https://) was cut. A value whose date cannot be put so (before 1970, more than 9
 *   fraction digits, no such time) is stored as given: its date token starts with a digit, never a mark
 *   (one whose date is not digits at all is no hash entry: parseHashEntry refuses it in either layout).
 * "format" in {dd}layout is this encoding's version: an index of any other format is refused.
 */
export const dedupeKeys = {
  crawlHashes: (crawlId: string) => `h:${crawlId}`,
  crawlCounts: (crawlId: string) => `h:${crawlId}:counts`,
  crawlWaczList: (crawlId: string) => `c:${crawlId}:wacz`,
  appliedNotes: (crawlId: string) => `h:${crawlId}:notes`,
  uncommittedCrawls: "uncommittedcrawls",
  concurrentCrawls: "concurrentcrawls",
  allCrawls: "allcrawls",
  allHashes: "allhashes",
  allCounts: "allcounts",
  crawlOrder: "crawlorder",
  purging: "purging",
  mergeLease: "mergelease",
  mergeEpoch: "mergeepoch",
  rebuildHashes: "allhashes:rebuild",
  rebuildUrls: "allurls:rebuild",
  crawlCaptures: (crawlId: string) => `u:${crawlId}`,
  crawlOutlinks: (crawlId: string) => `o:${crawlId}`,
  allUrls: "allurls",
  importQueue: "src:q",
  importQueued: "src:qset",
  importDone: "src:d",
  importInfo: "src:info",
  importConserve: "src:conserve",
  importPending: "pending:q",
  importLease: (name: string) => `pending:lease:${name}`,
  updateProgress: "updateProgress",
  lastUpdate: "last_update_ts",
} as const;

/** Lua fragments build the same names server-side; keep them next to the functions above. */
export const LUA_KEY = {
  crawlHashes: (idExpr: string) => `'h:' .. ${idExpr}`,
  crawlCounts: (idExpr: string) => `'h:' .. ${idExpr} .. ':counts'`,
  crawlCaptures: (idExpr: string) => `'u:' .. ${idExpr}`,
  crawlOutlinks: (idExpr: string) => `'o:' .. ${idExpr}`,
  crawlWaczList: (idExpr: string) => `'c:' .. ${idExpr} .. ':wacz'`,
} as const;

export type DedupeKeys = typeof dedupeKeys;
export type LuaKeys = typeof LUA_KEY;

/** How an index is laid out: today's names on one node, or sharded (cluster-safe). */
export type DedupeLayout = { kind: "single" } | { kind: "sharded"; prefixDigits: number };
export const SINGLE_LAYOUT: DedupeLayout = { kind: "single" };
/** 4 hex digits = 65,536 shards: ~150 hashes per shard at 10^7, ~1,500 at 10^8 (see docs/user-guide/scaling.md). */
export const DEFAULT_PREFIX_DIGITS = 4;

/** The hash tag every non-shard key of the sharded layout carries: they all live in one slot. */
const META_TAG = "{dd}";
export const LAYOUT_KEY = `${META_TAG}layout`;

function tagged<T extends Record<string, string | ((arg: string) => string)>>(keys: T): T {
  return Object.fromEntries(Object.entries(keys).map(([name, key]) => [
    name, typeof key === "string" ? META_TAG + key : (arg: string) => META_TAG + key(arg),
  ])) as T;
}

/** The sharded layout's names for everything but the hash shards. */
export const shardedMetaKeys: DedupeKeys = tagged(dedupeKeys);
export const SHARDED_LUA_KEY: LuaKeys = {
  crawlHashes: () => { throw new Error("the sharded layout has no single h:<crawlId>: use crawlHashShard"); },
  crawlCounts: (idExpr: string) => `'${META_TAG}h:' .. ${idExpr} .. ':counts'`,
  crawlCaptures: (idExpr: string) => `'${META_TAG}u:' .. ${idExpr}`,
  crawlOutlinks: (idExpr: string) => `'${META_TAG}o:' .. ${idExpr}`,
  crawlWaczList: (idExpr: string) => `'${META_TAG}c:' .. ${idExpr} .. ':wacz'`,
};

/** The two hash shards of the sharded layout: same tag, so one script may use both (and h:<other crawl> of it). */
export const shardKeys = {
  allHashes: (shard: string) => `{${shard}}ah`,
  rebuildHashes: (shard: string) => `{${shard}}ah:rebuild`,
  /** The merge lease's fence of the slot group whose first shard this is (dedupe/mergeLease.ts). */
  mergeFence: (shard: string) => `{${shard}}ah:fence`,
  crawlHashes: (crawlId: string, shard: string) => `{${shard}}h:${crawlId}`,
  /** Lua: h:<crawl> of the shard whose name is in `shardExpr`. */
  luaCrawlHashes: (shardExpr: string, idExpr: string) => `'{' .. ${shardExpr} .. '}h:' .. ${idExpr}`,
  /** Lua: allhashes of the shard whose name is in `shardExpr`. */
  luaAllHashes: (shardExpr: string) => `'{' .. ${shardExpr} .. '}ah'`,
} as const;

/** The sharded layout's field and value encoding (see above); {dd}layout records it. */
export const SHARDED_FORMAT = 2;

/** The {dd}layout record of a sharded index. */
export function shardedLayoutRecord(prefixDigits: number): string {
  return JSON.stringify({ layout: "sharded", prefixDigits, format: SHARDED_FORMAT });
}

const SHA256_DIGEST = /^sha256:([0-9a-f]{64})$/;

/** The shard of a digest: the first hex digits of a sha256 digest, else of the sha256 of its text. */
export function shardOfDigest(digest: string, prefixDigits: number): string {
  const hex = SHA256_DIGEST.exec(digest)?.[1] ?? createHash("sha256").update(digest).digest("hex");
  return hex.slice(0, prefixDigits);
}

/** Length of a sha256 digest's field: the whole bytes its shard name (prefixDigits hex digits) says are left out. */
export function sha256FieldLength(prefixDigits: number): number {
  return 32 - Math.floor(prefixDigits / 2);
}

const FIELD_PAD = Buffer.from(" ");

/** The field a digest is stored under in the sharded layout (see the layout comment above). */
export function digestField(digest: string, prefixDigits: number): Buffer {
  const rawLength = sha256FieldLength(prefixDigits);
  const hex = SHA256_DIGEST.exec(digest)?.[1];
  if (hex) return Buffer.from(hex, "hex").subarray(32 - rawLength);
  const text = Buffer.from(digest, "utf8");
  return text.length < rawLength ? text : Buffer.concat([text, FIELD_PAD]);
}

/** The inverse of digestField, for a field of the shard named `shard`. */
export function digestOfField(field: Buffer, shard: string): string {
  const rawLength = sha256FieldLength(shard.length);
  if (field.length === rawLength) return "sha256:" + shard.slice(0, 2 * (32 - rawLength)) + field.toString("hex");
  return field.subarray(0, field.length < rawLength ? field.length : field.length - 1).toString("utf8");
}

/** Every shard name of a layout, in order. */
export function allShards(prefixDigits: number): string[] {
  const count = 16 ** prefixDigits;
  return Array.from({ length: count }, (_, i) => i.toString(16).padStart(prefixDigits, "0"));
}

export const COUNT_FIELDS = ["totalCrawlSize", "totalUrls", "dupeUrls", "conservedSize"] as const;
export type CountField = (typeof COUNT_FIELDS)[number];
export const REMOVED_COUNT_FIELDS = ["removedCrawls", "removedCrawlSize"] as const;

/** Where an original response record is: the value of h:<crawlId>[digest]. */
export interface HashEntry {
  waczIndex: number;
  /** WARC-Date as digits: YYYYMMDDhhmmss plus optional fraction digits. */
  date: string;
  url: string;
  /** Length of the response record in its WARC. */
  size: number;
}

export function formatHashEntry(entry: HashEntry): string {
  return `${entry.waczIndex} ${entry.date} ${entry.url} ${entry.size}`;
}

/** Parse "<waczIndex> <date> <url> <size>": first two tokens and the last are fixed, so a URL with spaces survives. */
export function parseHashEntry(value: string): HashEntry | null {
  const tokens = hashEntryTokens(value);
  if (!tokens) return null;
  const [indexText, date, url, sizeText] = tokens;
  const waczIndex = Number(indexText);
  const size = Number(sizeText);
  if (!Number.isInteger(waczIndex) || !/^\d{14,}$/.test(date) || !url || !Number.isFinite(size)) return null;
  return { waczIndex, date, url, size };
}

// The sharded layout's compact value (see the layout comment above). The mark's index in MARKS is
// scheme * 10 + fraction digits; base-36 digits follow it, so only its first character is a mark.
const MARKS = "abcdefghijklmnopqrstuvwxyzABCD";
const CUT_SCHEMES = ["", "http://", "https://"] as const;
const COMPACTABLE_DATE = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d{0,9})$/;
const CANONICAL_NUMBER = /^(0|[1-9]\d*)$/;
const COMPACT_DATE = /^[a-zA-D][0-9a-z]+$/;

/** The four tokens of "<waczIndex> <date> <url> <size>" as text (the URL may hold spaces), or null. */
function hashEntryTokens(value: string): [string, string, string, string] | null {
  const first = value.indexOf(" ");
  const second = value.indexOf(" ", first + 1);
  const last = value.lastIndexOf(" ");
  if (first < 1 || second <= first || last <= second) return null;
  return [value.slice(0, first), value.slice(first + 1, second), value.slice(second + 1, last), value.slice(last + 1)];
}

/** "<waczIndex> <date> <url> <size>" -> its compact form; a value that cannot be put so, unchanged. */
export function compactHashEntry(value: string): string {
  const tokens = hashEntryTokens(value);
  if (!tokens) return value;
  const [waczIndex, date, url, size] = tokens;
  const parts = COMPACTABLE_DATE.exec(date);
  if (!parts || !CANONICAL_NUMBER.test(waczIndex) || !CANONICAL_NUMBER.test(size) || !Number.isSafeInteger(Number(size))) return value;
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const time = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  // Only a time that exists (no month 13, no leap second) and is not before 1970 reads back the same.
  const exists = time.getUTCFullYear() === year && time.getUTCMonth() === month - 1 && time.getUTCDate() === day &&
    time.getUTCHours() === hour && time.getUTCMinutes() === minute && time.getUTCSeconds() === second;
  if (!exists || time.getTime() < 0) return value;
  const fraction = parts[7]!;
  const scheme = url.startsWith("https://") ? 2 : url.startsWith("http://") ? 1 : 0;
  const count = (time.getTime() / 1000) * 10 ** fraction.length + Number(fraction || "0");
  // Up to 2^53 a Number is exact (up to 6 fraction digits until 2255); beyond, a BigInt.
  const digits = Number.isSafeInteger(count)
    ? count.toString(36)
    : (BigInt(time.getTime() / 1000) * 10n ** BigInt(fraction.length) + BigInt(fraction)).toString(36);
  return `${waczIndex} ${MARKS[scheme * 10 + fraction.length]!}${digits} ${url.slice(CUT_SCHEMES[scheme].length)} ${Number(size).toString(36)}`;
}

/** The inverse of compactHashEntry: "<waczIndex> <date> <url> <size>" again (a value stored as given, as it is). */
export function expandHashEntry(value: string): string {
  const tokens = hashEntryTokens(value);
  if (!tokens || !COMPACT_DATE.test(tokens[1])) return value;
  const [waczIndex, compactDate, url, size] = tokens;
  const markIndex = MARKS.indexOf(compactDate[0]!);
  const fractionDigits = markIndex % 10;
  const unit = 10 ** fractionDigits;
  let seconds: number;
  let fraction: string;
  // Ten base-36 digits are below 2^53: a Number is exact; longer, a BigInt.
  if (compactDate.length <= 11) {
    const count = parseInt(compactDate.slice(1), 36);
    fraction = String(count % unit);
    seconds = (count - (count % unit)) / unit;
  } else {
    let count = 0n;
    for (const digit of compactDate.slice(1)) count = count * 36n + BigInt(parseInt(digit, 36));
    seconds = Number(count / BigInt(unit));
    fraction = String(count % BigInt(unit));
  }
  const date = warcDateToDigits(new Date(seconds * 1000).toISOString()).slice(0, 14) + (fractionDigits ? fraction.padStart(fractionDigits, "0") : "");
  return `${waczIndex} ${date} ${CUT_SCHEMES[Math.floor(markIndex / 10)]}${url} ${parseInt(size, 36)}`;
}

/** One entry of c:<crawlId>:wacz. */
export interface WaczEntry {
  filename: string;
  hash?: string;
  size?: number;
}

export function parseWaczEntry(json: string | null): WaczEntry | null {
  if (!json) return null;
  try {
    const entry = JSON.parse(json) as WaczEntry;
    return typeof entry.filename === "string" ? entry : null;
  } catch {
    return null;
  }
}

/** One capture of a URL, the value of u:<crawlId>[url]: its latest response (redirects and errors too), or a confirming 304. */
export interface CaptureRecord {
  /** WARC-Date as digits (archive/warcDate.ts). */
  date: string;
  status: number;
  /** Payload digest of the capture (of the original, for a 304 that confirmed it). */
  digest: string;
  waczIndex: number;
  /** Redirects: the Location header as served (a redirect is unchanged while status and Location are). */
  location?: string;
  etag?: string;
  lastModified?: string;
  /** Pages only: the stored response's status text and headers, to write a replayable 304 revisit later. */
  statusText?: string;
  headers?: [string, string][];
  /**
   * A capture written as a revisit (a 304 that confirmed an earlier capture, or a payload archived already):
   * the response record holding its payload, which a revisit of this capture names in turn (replay tools
   * resolve a revisit one step, never through another revisit). Earlier versions kept it for a 304 only and
   * without `url`, naming the capture confirmed, which may be a revisit: such a record, and one without
   * `original` (which may be a revisit of theirs), is resolved by the dedupe index (payloadResponse.ts).
   */
  original?: { crawlId: string; date: string; waczIndex: number; url?: string };
}
