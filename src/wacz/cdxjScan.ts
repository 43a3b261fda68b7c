// A fast path for reading CDXJ lines in bulk: the fields the importer reads (url, mime, status,
// digest, length) taken from the line with indexOf and slices, with no object for the other fields
// and no key strings. It handles exactly the common, compact form JSON.stringify writes: a flat
// object of strings without escapes and numbers. Anything else (escapes, spaces, nested values,
// literals, malformed text) returns null and the caller parses the line with JSON.parse, so results
// and errors stay those of JSON.parse.
import type { CdxjRecord } from "./cdxjReader.js";

// Escapes need decoding, raw control characters are invalid JSON: both go to JSON.parse.
const UNUSUAL = /[\u0000-\u001f\\]/;
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const DIGITS = /^\d+$/;
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
  let p = second + 2;
  for (;;) {
    if (line.charCodeAt(p) !== QUOTE) return null;
    const keyStart = p + 1;
    const keyEnd = line.indexOf('"', keyStart);
    if (keyEnd < 0 || line.charCodeAt(keyEnd + 1) !== COLON) return null;
    p = keyEnd + 2;
    let value: string;
    if (line.charCodeAt(p) === QUOTE) {
      const end = line.indexOf('"', p + 1);
      if (end < 0) return null;
      value = line.slice(p + 1, end);
      p = end + 1;
    } else {
      let end = p;
      for (let c = line.charCodeAt(end); end < line.length && c !== COMMA && c !== CLOSE; c = line.charCodeAt(++end));
      const token = line.slice(p, end);
      if (!JSON_NUMBER.test(token)) return null;
      // Numbers stand for strings in CDXJ (status, length); a numeric url is an error the full parse reports.
      const n = Number(token);
      if (!Number.isFinite(n)) return null;
      value = String(n);
      if (keyEnd - keyStart === 3 && line.startsWith("url", keyStart)) return null;
      p = end;
    }
    switch (keyEnd - keyStart) {
      case 3:
        if (line.startsWith("url", keyStart)) record.url = value;
        break;
      case 4:
        if (line.startsWith("mime", keyStart)) record.mime = value;
        break;
      case 6:
        if (line.startsWith("status", keyStart)) record.status = value;
        else if (line.startsWith("digest", keyStart)) record.digest = value;
        else if (line.startsWith("length", keyStart)) record.length = value;
        break;
    }
    const c = line.charCodeAt(p);
    if (c === COMMA) {
      p += 1;
      continue;
    }
    if (c === CLOSE && p === line.length - 1) break;
    return null;
  }
  return record.url === "" ? null : record;
}
