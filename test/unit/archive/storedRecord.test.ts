import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { WARCSerializer } from "warcio/node";
import { afterEach, describe, expect, it } from "vitest";
import type { Exchange } from "../../../src/archive/exchange.js";
import { payloadDigest } from "../../../src/archive/digest.js";
import { newRecordId, requestRecord, responseRecord, revisitRecord, REVISIT_PROFILE_IDENTICAL } from "../../../src/archive/records.js";
import { readStoredResponse } from "../../../src/archive/storedRecord.js";
import { WarcWriter } from "../../../src/archive/warcWriter.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "stored-record-"));
  dirs.push(dir);
  return dir;
}

function exchange(url: string, body: Uint8Array, responseHeaders: [string, string][], bodyDecoded = true): Exchange {
  return {
    url, method: "GET", requestHeaders: [["User-Agent", "test"]], postData: null, status: 200, statusText: "OK", httpVersion: "HTTP/1.1",
    responseHeaders, body: { kind: "bytes", bytes: body }, bodyDecoded, date: new Date("2026-01-02T03:04:05.678Z"), resourceType: "Image",
  };
}

function writer(dir: string): WarcWriter {
  return new WarcWriter({ dir, filenamePrefix: "stored", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" } });
}

describe("a stored response read back at its placement", () => {
  it("gives the payload byte for byte, the status and every header as stored (gzip member written by WarcWriter)", async () => {
    const dir = tempDir();
    const warcs = writer(dir);
    const body = randomBytes(70_000);
    const decoded = exchange("http://a.test/img.png", body, [["Content-Type", "image/png"], ["Set-Cookie", "a=1"], ["Set-Cookie", "b=2"], ["Content-Encoding", "gzip"], ["Cache-Control", "no-store"]]);
    const id = newRecordId();
    const [first] = await warcs.writeRecords([responseRecord(decoded, id, await payloadDigest(decoded.body)), requestRecord(decoded, id)]);
    const other = exchange("http://a.test/b.txt", Buffer.from("second record"), [["Content-Type", "text/plain"]]);
    const otherId = newRecordId();
    const [second] = await warcs.writeRecords([responseRecord(other, otherId, await payloadDigest(other.body)), requestRecord(other, otherId)]);
    await warcs.close();
    const path = join(dir, first!.filename);

    const read = await readStoredResponse({ path, offset: first!.offset, length: first!.length });
    expect(read).not.toBeNull();
    expect(Buffer.from(read!.payload).equals(body)).toBe(true);
    expect(read!.status).toBe(200);
    expect(read!.statusText).toBe("OK");
    expect(read!.url).toBe("http://a.test/img.png");
    expect(read!.date).toBe("2026-01-02T03:04:05.678Z");
    // The decoded body was stored with its Content-Encoding renamed: nothing left to decode.
    expect(read!.headers).toEqual([
      ["Content-Type", "image/png"], ["Set-Cookie", "a=1"], ["Set-Cookie", "b=2"], ["x-orig-content-encoding", "gzip"], ["Cache-Control", "no-store"], ["Content-Length", "70000"],
    ]);

    const next = await readStoredResponse({ path, offset: second!.offset, length: second!.length });
    expect(Buffer.from(next!.payload).toString()).toBe("second record");
  });

  it("undoes a content encoding the stored record still names (a body stored as fetched outside the browser)", async () => {
    const dir = tempDir();
    const warcs = writer(dir);
    const text = Buffer.from("the page's script ".repeat(500));
    const encoded = exchange("http://a.test/app.js", gzipSync(text), [["Content-Type", "text/javascript"], ["Content-Encoding", "gzip"]], false);
    const id = newRecordId();
    const [record] = await warcs.writeRecords([responseRecord(encoded, id, await payloadDigest(encoded.body))]);
    await warcs.close();
    const read = await readStoredResponse({ path: join(dir, record!.filename), offset: record!.offset, length: record!.length });
    expect(Buffer.from(read!.payload).equals(text)).toBe(true);
    expect(read!.headers).toContainEqual(["Content-Encoding", "gzip"]);
  });

  it("reads a record of an uncompressed WARC file too", async () => {
    const dir = tempDir();
    const body = randomBytes(5000);
    const plain = exchange("http://a.test/plain.bin", body, [["Content-Type", "application/octet-stream"]]);
    const before = Buffer.from("WARC/1.1\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n");
    const record = Buffer.from(await WARCSerializer.serialize(responseRecord(plain, newRecordId(), await payloadDigest(plain.body)), { gzip: false }));
    const path = join(dir, "plain.warc");
    writeFileSync(path, Buffer.concat([before, record]));
    const read = await readStoredResponse({ path, offset: before.length, length: record.length });
    expect(Buffer.from(read!.payload).equals(body)).toBe(true);
    expect(read!.status).toBe(200);
  });

  it("gives nothing for a revisit (no payload) and throws for a record that is not there", async () => {
    const dir = tempDir();
    const warcs = writer(dir);
    const same = exchange("http://a.test/again.png", randomBytes(100), [["Content-Type", "image/png"]]);
    const digest = await payloadDigest(same.body);
    const [revisit] = await warcs.writeRecords([revisitRecord(same, newRecordId(), { url: "http://a.test/first.png", date: "2026-01-01T00:00:00Z", digest, profile: REVISIT_PROFILE_IDENTICAL })]);
    await warcs.close();
    const path = join(dir, revisit!.filename);
    expect(await readStoredResponse({ path, offset: revisit!.offset, length: revisit!.length })).toBeNull();
    const size = statSync(path).size;
    await expect(readStoredResponse({ path, offset: size - 10, length: 100 })).rejects.toThrow(/ends before byte/);
    await expect(readStoredResponse({ path: join(dir, "moved.warc.gz"), offset: 0, length: 10 })).rejects.toThrow(/ENOENT/);
  });
});
