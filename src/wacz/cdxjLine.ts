// The CDXJ line format, `<urlkey> <timestamp> <json object>`: the one place a CDXJ line is parsed,
// by the WACZ writer (ZipNum blocks), the WACZ reader (the indexer) and the tests.
//   cdxjLineParts     the syntax: key, timestamp and the JSON object, as they are
//   cdxjRecordOf      a capture line as a record (a url, numeric fields as strings), or why it is not one
//   parseCdxjLine     the same, throwing WaczIndexError
//   scanCdxjLine      the bulk reader's shortcut to cdxjRecordOf for lines in the common compact form

export class WaczIndexError extends Error {
  override name = "WaczIndexError";
}

/** One CDXJ line: its JSON fields (numeric mime/status/digest/length/offset/filename as strings), with urlkey and timestamp. */
export interface CdxjRecord {
  urlkey: string;
  timestamp: string;
  url: string;
  mime?: string;
  status?: string;
  digest?: string;
  length?: string;
  offset?: string;
  filename?: string;
  [k: string]: unknown;
}

/** Split `<urlkey> <timestamp> <json>`; throws SyntaxError on bad JSON, Error on any other malformed line. */
export function cdxjLineParts(line: string): { urlkey: string; timestamp: string; json: Record<string, unknown> } {
  const first = line.indexOf(" ");
  const second = first < 0 ? -1 : line.indexOf(" ", first + 1);
  if (first <= 0 || second < 0) throw new Error(`malformed CDXJ line: ${line}`);
  const json: unknown = JSON.parse(line.slice(second + 1));
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new Error(`malformed CDXJ JSON: ${line}`);
  }
  return { urlkey: line.slice(0, first), timestamp: line.slice(first + 1, second), json: json as Record<string, unknown> };
}

const STRING_FIELDS = ["mime", "status", "digest", "length", "offset", "filename"] as const;

/** The record of a CDXJ line, or why the line is not a CDXJ line. */
export function cdxjRecordOf(line: string): CdxjRecord | string {
  let parts: ReturnType<typeof cdxjLineParts>;
  try {
    parts = cdxjLineParts(line);
  } catch (err) {
    return err instanceof SyntaxError ? `bad JSON: ${err.message}` : "expected <urlkey> <timestamp> <json object>";
  }
  const { urlkey, timestamp, json } = parts;
  if (!/^\d+$/.test(timestamp)) return "timestamp is not digits";
  const url = json["url"];
  if (typeof url !== "string" || url === "") return 'no "url"';
  // The parsed object is ours: add the two prefix fields to it instead of copying it.
  const record = json as CdxjRecord;
  record.urlkey = urlkey;
  record.timestamp = timestamp;
  for (const key of STRING_FIELDS) {
    const value = json[key];
    if (value === undefined || typeof value === "string") continue;
    if (typeof value === "number" && Number.isFinite(value)) record[key] = String(value);
    else return `"${key}" is not a string`;
  }
  return record;
}

/** Parse a CDXJ line into its record; throws WaczIndexError on a malformed line. */
export function parseCdxjLine(line: string): CdxjRecord {
  const result = cdxjRecordOf(line);
  if (typeof result === "string") throw new WaczIndexError(`malformed CDXJ line (${result}): ${previewLine(line)}`);
  return result;
}

/** A line as quoted in an error message (long ones cut). */
export function previewLine(line: string): string {
  return JSON.stringify(line.length > 200 ? `${line.slice(0, 200)}...` : line);
}

// scanCdxjLine, the fast path for reading CDXJ lines in bulk: the fields the importer reads (url, mime, status,
// digest, length) taken from the line with indexOf and slices, with no object for the other fields
// and no key strings. It handles the two common forms of a flat object of strings (without escapes)
// and numbers: the compact one JSON.stringify writes (ours, warcio.js) and the one Python's json.dumps
// writes (pywb, cdxj-indexer: a space after each ':' and ','); spaces are skipped wherever JSON allows
// them. Anything else (escapes, other whitespace, nested values, literals, malformed text) returns null
// and the caller parses the line with cdxjRecordOf, so results and errors stay those of JSON.parse.
// Escapes need decoding, raw control characters are invalid JSON: both go to JSON.parse.
const UNUSUAL = /[\u0000-\u001f\\]/;
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const DIGITS = /^\d+$/;
const SPACE = 32;
const QUOTE = 34;
const COLON = 58;
const COMMA = 44;
const OPEN = 123;
const CLOSE = 125;

/** The record of a `<urlkey> <timestamp> {json}` line in the common form, or null (parse it fully). */
export function scanCdxjLine(line: string): CdxjRecord | null {
  if (UNUSUAL.test(line)) return null;
  const first = line.indexOf(" ");
  if (first <= 0) return null;
  const second = line.indexOf(" ", first + 1);
  if (second < 0 || line.charCodeAt(second + 1) !== OPEN) return null;
  const timestamp = line.slice(first + 1, second);
  if (!DIGITS.test(timestamp)) return null;
  const record: CdxjRecord = { urlkey: line.slice(0, first), timestamp, url: "" };
  let p = skipSpaces(line, second + 2);
  for (;;) {
    if (line.charCodeAt(p) !== QUOTE) return null;
    const keyStart = p + 1;
    const keyEnd = line.indexOf('"', keyStart);
    if (keyEnd < 0) return null;
    const field = fieldOf(line, keyStart, keyEnd);
    p = keyEnd + 1;
    if (line.charCodeAt(p) === SPACE) p = skipSpaces(line, p);
    if (line.charCodeAt(p) !== COLON) return null;
    p += 1;
    if (line.charCodeAt(p) === SPACE) p = skipSpaces(line, p);
    let value: string | undefined;
    if (line.charCodeAt(p) === QUOTE) {
      const end = line.indexOf('"', p + 1);
      if (end < 0) return null;
      // Only the values the importer reads become strings.
      if (field !== Field.Other) value = line.slice(p + 1, end);
      p = end + 1;
    } else {
      // Numbers stand for strings in CDXJ (status, length); a numeric url is an error the full parse reports.
      if (field === Field.Url) return null;
      let end = p;
      for (let c = line.charCodeAt(end); end < line.length && c !== COMMA && c !== CLOSE && c !== SPACE; c = line.charCodeAt(++end));
      const token = line.slice(p, end);
      if (!JSON_NUMBER.test(token)) return null;
      const n = Number(token);
      if (!Number.isFinite(n)) return null;
      value = String(n);
      p = end;
    }
    switch (field) {
      case Field.Url:
        record.url = value!;
        break;
      case Field.Mime:
        record.mime = value;
        break;
      case Field.Status:
        record.status = value;
        break;
      case Field.Digest:
        record.digest = value;
        break;
      case Field.Length:
        record.length = value;
        break;
    }
    let c = line.charCodeAt(p);
    if (c === SPACE) {
      p = skipSpaces(line, p);
      c = line.charCodeAt(p);
    }
    if (c === COMMA) {
      p += 1;
      if (line.charCodeAt(p) === SPACE) p = skipSpaces(line, p);
      continue;
    }
    if (c === CLOSE && p === line.length - 1) break;
    return null;
  }
  return record.url === "" ? null : record;
}

const enum Field {
  Other,
  Url,
  Mime,
  Status,
  Digest,
  Length,
}

/** Which of the fields the importer reads the key line[start, end) names (compared in place: no key string). */
function fieldOf(line: string, start: number, end: number): Field {
  switch (end - start) {
    case 3:
      return line.startsWith("url", start) ? Field.Url : Field.Other;
    case 4:
      return line.startsWith("mime", start) ? Field.Mime : Field.Other;
    case 6:
      switch (line.charCodeAt(start)) {
        case 115: // s
          return line.startsWith("status", start) ? Field.Status : Field.Other;
        case 100: // d
          return line.startsWith("digest", start) ? Field.Digest : Field.Other;
        case 108: // l
          return line.startsWith("length", start) ? Field.Length : Field.Other;
      }
  }
  return Field.Other;
}

/** The first position at or after `p` that is not a space. */
function skipSpaces(line: string, p: number): number {
  while (line.charCodeAt(p) === SPACE) p++;
  return p;
}
