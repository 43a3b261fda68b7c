import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { payloadDigest } from "../../../src/archive/digest.js";
import type { Exchange } from "../../../src/archive/exchange.js";
import { newRecordId, requestRecord, responseRecord } from "../../../src/archive/records.js";
import { WarcWriter, type WrittenRecord } from "../../../src/archive/warcWriter.js";
import { filesWith, fsError } from "../../helpers/logFiles.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function exchange(n: number): Exchange {
  return {
    url: `http://a.test/${n}`, method: "GET", requestHeaders: [["User-Agent", "test"]], postData: null, status: 200, statusText: "OK", httpVersion: "HTTP/1.1",
    responseHeaders: [["Content-Type", "text/plain"]], body: { kind: "bytes", bytes: Buffer.from(`body ${n} `.repeat(100)) }, bodyDecoded: true,
    date: new Date("2026-01-02T03:04:05.678Z"), resourceType: "Document",
  };
}

/** Wait for `done` (a loaded machine takes its time; a fixed sleep would not do). */
async function until(done: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; !done(); ) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const end = (records: WrittenRecord[]) => records[records.length - 1]!.offset + records[records.length - 1]!.length;
const urlsIn = (path: string) => readWarcRecords(path).map((r) => r.headers.get("warc-target-uri") ?? "warcinfo");

describe("WARC writer after a failed fsync", () => {
  it("does not trust the next sync: the file ends at what the last good sync covered, the batches it did not cover fail, the next go into a new file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-failed-sync-"));
    dirs.push(dir);
    let syncs = 0;
    let writeCalls = 0;
    let failNow = (): void => undefined;
    const failing = new Promise<void>((resolve) => (failNow = resolve));
    const closed: [string, number][] = [];
    const closeFailures: string[] = [];
    const writer = new WarcWriter({
      dir, filenamePrefix: "rec-eio", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" }, durable: true,
      // The second sync fails (EIO), once two more batches were written while it ran; every sync after it works.
      openFile: filesWith((file) => ({
        write: (buffer, offset, length, position) => {
          writeCalls += 1;
          return file.write(buffer, offset, length, position);
        },
        datasync: async () => {
          if (++syncs !== 2) return file.datasync();
          await failing;
          throw fsError("EIO", "input/output error");
        },
      })),
      onFileClosed: async (filename, size) => void closed.push([filename, size]),
      onCloseFailed: (filename, err) => closeFailures.push(`${filename}: ${String(err)}`),
    });
    const write = async (n: number) => {
      const ex = exchange(n);
      const id = newRecordId();
      return writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)]);
    };
    const first = await write(1);
    const second = write(2);
    await until(() => syncs === 2);
    const third = write(3);
    const fourth = write(4);
    // The warcinfo and four batches of two records written.
    await until(() => writeCalls === 9);
    failNow();
    const outcomes = await Promise.allSettled([second, third, fourth]);
    expect(outcomes.map((o) => (o.status === "rejected" ? (o.reason as NodeJS.ErrnoException).code : "stored"))).toEqual(["EIO", "EIO", "EIO"]);

    // The disk works again: the next batch is stored, in a new file.
    const fifth = await write(5);
    await writer.close();
    const [file] = first.map((r) => r.filename);
    expect(fifth[0]!.filename).not.toBe(file);
    expect(writer.filesWritten).toEqual([file, fifth[0]!.filename]);
    // No marker left: both files were ended cleanly, the first one cut back to the batch its good sync covered.
    expect(readdirSync(dir).sort()).toEqual([...writer.filesWritten].sort());
    expect(urlsIn(join(dir, file!))).toEqual(["warcinfo", "http://a.test/1", "http://a.test/1"]);
    expect(readFileSync(join(dir, file!)).length).toBe(end(first));
    expect(urlsIn(join(dir, fifth[0]!.filename))).toEqual(["warcinfo", "http://a.test/5", "http://a.test/5"]);
    expect(closed).toEqual([[file, end(first)], [fifth[0]!.filename, end(fifth)]]);
    expect(closeFailures).toEqual([]);
    expect(writer.bytesWritten).toBe(end(first) + end(fifth));
  });
});
