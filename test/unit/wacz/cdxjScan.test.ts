import { describe, expect, it } from "vitest";
import { parseCdxjLine as parseCdxjRecord, scanCdxjLine } from "../../../src/wacz/cdxjLine.js";

const FIELDS = ["urlkey", "timestamp", "url", "mime", "status", "digest", "length"] as const;
const pick = (r: Record<string, unknown>) => Object.fromEntries(FIELDS.filter((f) => r[f] !== undefined).map((f) => [f, r[f]]));

describe("the CDXJ fast path", () => {
  it.each([
    'com,example)/ 20260101000000 {"url":"https://example.com/","mime":"text/html","status":"200","digest":"sha256:ab","length":"387","offset":"0","filename":"a.warc.gz"}',
    'com,example)/a 20260101000000 {"url":"https://example.com/a","mime":"warc/revisit","status":200,"digest":"ab","length":1e2,"offset":"0"}',
    'urn:pageinfo:https://example.com/ 20260101000000 {"url":"urn:pageinfo:https://example.com/","mime":"application/json","digest":"cd","length":"50","extra":-1.5,"url":"urn:pageinfo:https://example.com/x"}',
    // pywb / cdxj-indexer (Python's json.dumps)
    'com,example)/ 20170306040206 {"url": "http://example.com/", "mime": "text/html", "status": "200", "digest": "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK", "length": "1228", "offset": "784", "filename": "example.warc.gz"}',
    'com,example)/ 20260101000000 {"url": "https://example.com/", "digest": "6be9f658937541d03bf96d3575cd5df9d3c365ee74e351a231eb5dd743ed112a", "length": "384", "offset": "0", "filename": "x.warc.gz", "mime": "text/html", "status": "200"}',
    // spaces wherever JSON allows them, other field orders, missing fields, numbers before spaces
    'com,example)/ 20260101000000 {  "status" : 200 , "length"  :  1228 ,"url" :"https://example.com/"  }',
    'com,example)/ 20260101000000 {"length": "12", "url": "https://example.com/"}',
    'com,example)/ 20260101000000 {"url": "https://example.com/", "digest": "sha256:zz not hex", "mime": ""}',
    'com,example)/ 20260101000000 {"url": "https://example.com/", "digest": "", "status": "-"}',
    'com,example)/ 20260101000000 {"url": "https://example.com/a b", "note": "a,b:c}{", "status": "200"}',
  ])("gives the fields JSON.parse gives: %s", (line) => {
    const fast = scanCdxjLine(line);
    expect(fast).not.toBeNull();
    expect(pick(fast!)).toEqual(pick(parseCdxjRecord(line)));
  });

  it.each([
    'com,example)/ 20260101000000 {"url":"https://example.com/\\u00e9","status":"200"}', // escape
    'com,example)/ 20260101000000 {"url": "https://example.com/\\"x\\"", "status": "200"}', // escaped quotes
    'com,example)/ 20260101000000 {"url": "https://example.com/\\u00e9", "status": "200"}', // unicode escape (pywb)
    'com,example)/ 20260101000000 {"url":\t"https://example.com/"}', // whitespace other than spaces
    'com,example)/ 20260101000000 {"url": "https://example.com/", "status": "200", }', // trailing comma
    'com,example)/ 20260101000000 {"url": "https://example.com/" "status": "200"}', // missing comma
    'com,example)/ 20260101000000 {"url" "https://example.com/"}', // missing colon
    'com,example)/ 20260101000000 {"status": "200"}', // no url
    'com,example)/ 20260101000000 {"url": 5}', // numeric url
    'com,example)/ 20260101000000 {"url": "https://example.com/", "length": 1 2}', // two numbers
    'com,example)/ 20260101000000 {"url": "https://example.com/"} ', // trailing space
    'com,example)/ 20260101000000 {"url":"https://example.com/","meta":{"a":1}}', // nested
    'com,example)/ 20260101000000 {"url":"https://example.com/","ok":true}', // literal
    'com,example)/ 20260101000000 {"url":"https://example.com/","length":1e999}', // not finite
    'com,example)/ 20260101000000 {"url":"https://example.com/","status":"200"', // truncated
    'com,example)/ 20260101000000 {"url":"https://example.com/"} x', // trailing text
    'com,example)/ 2026010100000x {"url":"https://example.com/"}', // timestamp
    'com,example)/ 20260101000000 {"url":"","status":"200"}', // empty url
    'com,example)/ 20260101000000 {"url":"a\tb"}', // raw control character
  ])("leaves unusual or malformed lines to the full parse: %s", (line) => {
    expect(scanCdxjLine(line)).toBeNull();
  });
});

describe("the CDXJ fast path on mangled lines", () => {
  // Deterministic mutations of a pywb line and of a compact one: whatever the fast path accepts, it must
  // read exactly as JSON.parse does, and every line JSON.parse rejects it must leave to the full parse.
  const BASES = [
    'com,example)/a?b=1 20170306040206 {"url": "http://example.com/a?b=1", "mime": "text/html", "status": "200", "digest": "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK", "length": "1228", "offset": "784", "filename": "example.warc.gz"}',
    'com,example)/ 20260101000000 {"url":"https://example.com/","mime":"text/html","status":200,"digest":"sha256:ab","length":"387"}',
  ];
  const PIECES = ['"', "\\", ":", ",", "{", "}", " ", "  ", "1", "-", "e", "u", "\\u00e9", '\\"', "\t", "é", "url", '"url"', "status", "null"];
  let seed = 19;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const mutants: string[] = [];
  for (let i = 0; i < 4000; i++) {
    let line = BASES[i % BASES.length]!;
    for (let edits = 1 + random(3); edits > 0; edits--) {
      const at = random(line.length + 1);
      const cut = random(3) === 0 ? random(4) : 0;
      line = line.slice(0, at) + PIECES[random(PIECES.length)]! + line.slice(at + cut);
    }
    mutants.push(line);
  }

  it("agrees with the full parse on 4,000 mutants", () => {
    let fast = 0;
    for (const line of mutants) {
      const scanned = scanCdxjLine(line);
      let full: ReturnType<typeof parseCdxjRecord> | null = null;
      try {
        full = parseCdxjRecord(line);
      } catch {
        expect(scanned, line).toBeNull();
      }
      if (scanned && full) {
        fast++;
        expect(pick(scanned), line).toEqual(pick(full));
      }
    }
    // The mutants exercise the fast path, not only the fallback.
    expect(fast).toBeGreaterThan(500);
  });
});
