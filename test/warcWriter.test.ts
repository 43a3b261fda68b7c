import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Exchange } from "../src/archive/exchange.js";
import { storedResponseHeaders } from "../src/archive/httpHeaders.js";
import { newRecordId, requestRecord, responseRecord } from "../src/archive/records.js";
import { WarcWriter } from "../src/archive/warcWriter.js";
import { payloadDigest } from "../src/archive/digest.js";
import { readWarcRecords, sha256 } from "./helpers/warcFile.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function exchange(url: string, body: string, extraHeaders: [string, string][] = []): Exchange {
  return {
    url,
    method: "GET",
    requestHeaders: [["User-Agent", "test"]],
    postData: null,
    status: 200,
    statusText: "OK",
    httpVersion: "HTTP/1.1",
    responseHeaders: [["Content-Type", "text/plain"], ...extraHeaders],
    body: { kind: "bytes", bytes: Buffer.from(body) },
    bodyDecoded: true,
    date: new Date("2026-01-02T03:04:05.678Z"),
    resourceType: "Document",
  };
}

describe("stored response headers", () => {
  it("renames encodings of a decoded body and sets Content-Length to the stored length", () => {
    const headers = storedResponseHeaders(
      exchange("http://a.test/", "hello", [["Content-Encoding", "gzip"], ["Transfer-Encoding", "chunked"], ["Content-Length", "999"]]),
    );
    expect(headers).toEqual([
      ["Content-Type", "text/plain"],
      ["x-orig-content-encoding", "gzip"],
      ["x-orig-transfer-encoding", "chunked"],
      ["Content-Length", "5"],
    ]);
  });

  it("keeps Content-Encoding when the body is stored still encoded (direct fetch)", () => {
    const raw = { ...exchange("http://a.test/", "xx", [["Content-Encoding", "gzip"]]), bodyDecoded: false };
    expect(storedResponseHeaders(raw)).toContainEqual(["Content-Encoding", "gzip"]);
  });
});

describe("WARC writer", () => {
  it("rolls over to a new file past --rolloverSize, each file opening with warcinfo, records adjacent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-"));
    dirs.push(dir);
    const writer = new WarcWriter({ dir, filenamePrefix: "rec-test", rolloverSize: 2000, owner: "test", warcinfo: { software: "test" } });
    const written = [];
    for (let i = 0; i < 6; i++) {
      const ex = exchange(`http://a.test/${i}`, `body ${i} `.repeat(200));
      const id = newRecordId();
      written.push(...(await writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)])));
    }
    await writer.close();
    const files = readdirSync(dir).sort();
    expect(files.length).toBeGreaterThan(1);
    expect(files).toEqual(writer.filesWritten.slice().sort());
    for (const file of files) {
      const records = readWarcRecords(join(dir, file));
      expect(records[0].headers.get("warc-type")).toBe("warcinfo");
      expect(records[0].headers.get("warc-filename")).toBe(file);
      // A response and its request are never split across files.
      for (let i = 1; i < records.length; i += 2) {
        expect(records[i].headers.get("warc-type")).toBe("response");
        expect(records[i + 1].headers.get("warc-concurrent-to")).toBe(records[i].headers.get("warc-record-id"));
      }
    }
    // Reported offsets and lengths address exactly the gzip member of each record.
    for (const w of written) {
      const record = readWarcRecords(join(dir, w.filename)).find((r) => r.offset === w.offset)!;
      expect(record.length).toBe(w.length);
      expect(record.headers.get("warc-record-id")).toBe(w.recordId);
      if (w.type === "response") expect(w.payloadDigest).toBe(sha256(record.payload));
    }
    expect(written[0].date).toBe("2026-01-02T03:04:05.678Z");
  });
});
