import { describe, expect, it } from "vitest";
import { parseCdxjLine as parseCdxjRecord, scanCdxjLine } from "../src/wacz/cdxjLine.js";

const FIELDS = ["urlkey", "timestamp", "url", "mime", "status", "digest", "length"] as const;
const pick = (r: Record<string, unknown>) => Object.fromEntries(FIELDS.filter((f) => r[f] !== undefined).map((f) => [f, r[f]]));

describe("the CDXJ fast path", () => {
  it.each([
    'com,example)/ 20260101000000 {"url":"https://example.com/","mime":"text/html","status":"200","digest":"sha256:ab","length":"387","offset":"0","filename":"a.warc.gz"}',
    'com,example)/a 20260101000000 {"url":"https://example.com/a","mime":"warc/revisit","status":200,"digest":"ab","length":1e2,"offset":"0"}',
    'urn:pageinfo:https://example.com/ 20260101000000 {"url":"urn:pageinfo:https://example.com/","mime":"application/json","digest":"cd","length":"50","extra":-1.5,"url":"urn:pageinfo:https://example.com/x"}',
  ])("gives the fields JSON.parse gives: %s", (line) => {
    const fast = scanCdxjLine(line);
    expect(fast).not.toBeNull();
    expect(pick(fast!)).toEqual(pick(parseCdxjRecord(line)));
  });

  it.each([
    'com,example)/ 20260101000000 {"url":"https://example.com/\\u00e9","status":"200"}', // escape
    'com,example)/ 20260101000000 {"url": "https://example.com/", "status": "200"}', // spaces (pywb)
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
