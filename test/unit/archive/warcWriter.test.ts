import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { WARCSerializer } from "warcio/node";
import { afterEach, describe, expect, it } from "vitest";
import type { Exchange } from "../../../src/archive/exchange.js";
import { storedResponseHeaders } from "../../../src/archive/httpHeaders.js";
import { newRecordId, requestRecord, responseRecord } from "../../../src/archive/records.js";
import { WarcWriter, type WrittenRecord } from "../../../src/archive/warcWriter.js";
import { indexWarcFiles } from "../../../src/wacz/cdxj.js";
import { cdxjLineParts as parseCdxjLine } from "../../../src/wacz/cdxjLine.js";
import { payloadDigest } from "../../../src/archive/digest.js";
import { filesWith, fsError } from "../../helpers/logFiles.js";
import { gzipMembers, parseRecord, readWarcRecords, sha256 } from "../../helpers/warcFile.js";

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
  it("records count as written only once a sync covers them, one sync for the batches written meanwhile (issue 28, item 9)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-sync-"));
    dirs.push(dir);
    let open = (): void => undefined;
    let gate = new Promise<void>((resolve) => (open = resolve));
    let syncs = 0;
    let writeCalls = 0;
    const writer = new WarcWriter({
      dir, filenamePrefix: "rec-sync", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" },
      openFile: filesWith((file) => ({
        datasync: async () => {
          syncs += 1;
          await gate;
          await file.datasync();
        },
        write: (buffer, offset, length, position) => {
          writeCalls += 1;
          return file.write(buffer, offset, length, position);
        },
      })),
    });
    const resolved: string[] = [];
    const writes = [0, 1, 2, 3].map(async (i) => {
      const ex = exchange(`http://a.test/${i}`, `body ${i}`);
      const id = newRecordId();
      await writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)]);
      resolved.push(ex.url);
    });
    // The warcinfo and the four batches' records written (waited for: a loaded machine takes its time).
    for (const deadline = Date.now() + 10_000; writeCalls < 9 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // All four batches are in the file, none counts as written: the first sync is held.
    expect(resolved).toEqual([]);
    expect(syncs).toBe(1);
    gate = Promise.resolve();
    open();
    await Promise.all(writes);
    // The held sync covered the first batch; the three written while it ran shared one more.
    expect(syncs).toBe(2);
    expect(resolved.sort()).toEqual([0, 1, 2, 3].map((i) => `http://a.test/${i}`));
    await writer.close();
  });

  it("a sync vouches only for whole batches: the sizes it reports (the power-loss test cuts files back to them) never split an exchange", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-synced-"));
    dirs.push(dir);
    let openSync = (): void => undefined;
    const syncGate = new Promise<void>((resolve) => (openSync = resolve));
    let syncs = 0;
    let openWrite = (): void => undefined;
    const writeGate = new Promise<void>((resolve) => (openWrite = resolve));
    let writes = 0;
    let heldWriteReached = (): void => undefined;
    const heldWrite = new Promise<void>((resolve) => (heldWriteReached = resolve));
    const reported: [string, number][] = [];
    const writer = new WarcWriter({
      dir, filenamePrefix: "rec-synced", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" },
      // The first sync is held until the third batch is half written.
      // Writes: warcinfo, then a response and its request per batch; the 7th (the third batch's request) is held.
      openFile: filesWith((file) => ({
        datasync: async () => {
          if (++syncs === 1) await syncGate;
          await file.datasync();
        },
        write: async (buffer, offset, length, position) => {
          if (++writes === 7) {
            heldWriteReached();
            await writeGate;
          }
          return file.write(buffer, offset, length, position);
        },
      })),
      onSynced: (filename, upTo) => reported.push([filename, upTo]),
    });
    const batch = async (i: number) => {
      const ex = exchange(`http://a.test/${i}`, `body ${i}`);
      const id = newRecordId();
      return writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)]);
    };
    const first = batch(0);
    await new Promise((resolve) => setTimeout(resolve, 100)); // its sync has begun (and is held)
    const second = batch(1);
    const third = batch(2);
    await heldWrite;
    // The second batch's sync begins now, with the third batch's response in the file but not its request.
    openSync();
    const [a, b] = await Promise.all([first, second]);
    openWrite();
    const c = await third;
    await writer.close();
    const end = (records: WrittenRecord[]) => records[records.length - 1]!.offset + records[records.length - 1]!.length;
    const filename = a[0]!.filename;
    expect(reported).toEqual([[filename, end(a)], [filename, end(b)], [filename, end(c)], [filename, end(c)]]);
  });

  it("a file that cannot be closed cleanly at rollover does not fail the write that filled it (issue 28, item 11)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-close-"));
    dirs.push(dir);
    const failures: string[] = [];
    const closed: string[] = [];
    const writer = new WarcWriter({
      dir, filenamePrefix: "rec-close", rolloverSize: 1500, owner: "test", warcinfo: { software: "test" },
      // The WACZ plan cannot be told (its Redis is down, say) when the first file fills up.
      onFileClosed: async (filename) => {
        closed.push(filename);
        if (closed.length === 1) throw new Error("Connection is closed.");
      },
      onCloseFailed: (filename, err) => failures.push(`${filename}: ${(err as Error).message}`),
    });
    const first = exchange("http://a.test/fills-the-file", randomBytes(3000).toString("base64")); // incompressible
    const id = newRecordId();
    const written = await writer.writeRecords([responseRecord(first, id, await payloadDigest(first.body)), requestRecord(first, id)]);
    expect(written.map((r) => r.type)).toEqual(["response", "request"]);
    expect(failures).toEqual([`${written[0]!.filename}: Connection is closed.`]);
    const second = exchange("http://a.test/next", "y".repeat(10));
    const next = newRecordId();
    const [nextRecord] = await writer.writeRecords([responseRecord(second, next, await payloadDigest(second.body)), requestRecord(second, next)]);
    await writer.close();
    // The next record went into a new file; the first file is whole, closed and has no open marker.
    expect(nextRecord!.filename).not.toBe(written[0]!.filename);
    expect(closed).toEqual([written[0]!.filename, nextRecord!.filename]);
    expect(readdirSync(dir).sort()).toEqual([written[0]!.filename, nextRecord!.filename].sort());
    const records = readWarcRecords(join(dir, written[0]!.filename));
    expect(records.map((r) => r.headers.get("warc-type"))).toEqual(["warcinfo", "response", "request"]);
  });

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

describe("WARC writer, a body in a temp file", () => {
  it("writes it as one gzip member, byte for byte what warcio writes for the same body in memory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-"));
    dirs.push(dir);
    // Past warcio's in-memory size, many read chunks, and bytes that are not all alike.
    const bytes = Buffer.alloc(5_000_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 12)) % 256;
    const path = join(dir, "body");
    writeFileSync(path, bytes);
    const inMemory = { ...exchange("http://a.test/big", ""), body: { kind: "bytes", bytes } } satisfies Exchange;
    const inFile = { ...inMemory, body: { kind: "file", path, size: bytes.length } } satisfies Exchange;
    const digest = await payloadDigest(inMemory.body);
    expect(await payloadDigest(inFile.body)).toBe(digest);
    const id = newRecordId();
    const writer = new WarcWriter({ dir: join(dir, "warc"), filenamePrefix: "rec-file", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" } });
    const [written] = await writer.writeRecords([responseRecord(inFile, id, digest)]);
    await writer.close();
    const member = readFileSync(join(dir, "warc", written.filename)).subarray(written.offset, written.offset + written.length);
    expect(gzipMembers(member)).toHaveLength(1);
    const expected = await WARCSerializer.serialize(responseRecord(inMemory, id, digest), { gzip: false });
    expect(gunzipSync(member).equals(Buffer.from(expected))).toBe(true);
  });
});

describe("WARC writer, a body in memory", () => {
  it("writes each record as one gzip member holding what warcio serializes, gzipped at once or streamed past 256 KiB", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-"));
    dirs.push(dir);
    const writer = new WarcWriter({ dir, filenamePrefix: "rec-mem", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" } });
    for (const size of [0, 1000, 256 * 1024 - 400, 300_000, 3_900_000]) {
      const bytes = Buffer.alloc(size);
      for (let i = 0; i < size; i++) bytes[i] = (i * 7919 + (i >> 10)) % 251;
      const inMemory = { ...exchange(`http://a.test/${size}`, ""), body: { kind: "bytes", bytes } } satisfies Exchange;
      const digest = await payloadDigest(inMemory.body);
      const id = newRecordId();
      const written = await writer.writeRecords([responseRecord(inMemory, id, digest), requestRecord(inMemory, id)]);
      const file = readFileSync(join(dir, written[0]!.filename));
      for (const [i, record] of [responseRecord(inMemory, id, digest), requestRecord(inMemory, id)].entries()) {
        const member = file.subarray(written[i]!.offset, written[i]!.offset + written[i]!.length);
        expect(gzipMembers(member), `${size}: record ${i}`).toHaveLength(1);
        const expected = Buffer.from(await WARCSerializer.serialize(record, { gzip: false }));
        // The same headers, block digest and payload byte for byte (a request record has an id of its own each time it is made).
        const withoutId = (bytes: Buffer) => bytes.toString("latin1").replace(/^WARC-Record-ID: .*\r\n/m, "");
        if (i === 0) expect(gunzipSync(member).equals(expected), `${size}: response`).toBe(true);
        else expect(withoutId(gunzipSync(member))).toBe(withoutId(expected));
      }
    }
    await writer.close();
  });
});

describe("WARC writer after a failed write", () => {
  /**
   * Writes like a real file, except the calls listed: "throw" writes half the bytes and fails (ENOSPC); "short"
   * writes half and says so, and the call that goes on with the rest takes nothing (the disk is full).
   */
  function failingWritesOn(calls: Set<number>, mode: "short" | "throw") {
    let n = 0;
    let full = false;
    return {
      calls: () => n,
      openFile: filesWith((file) => ({
        write: async (buffer, offset, length, position) => {
          n += 1;
          if (full) {
            full = false;
            return { bytesWritten: 0 };
          }
          if (!calls.has(n)) return file.write(buffer, offset, length, position);
          const { bytesWritten } = await file.write(buffer, offset, Math.floor(length / 2), position);
          if (mode === "throw") throw fsError("ENOSPC", "no space left on device");
          full = true;
          return { bytesWritten };
        },
      })),
    };
  }

  for (const mode of ["short", "throw"] as const) {
    it(`cuts a ${mode === "short" ? "short" : "failed"} write off, ends that file at its last whole record and goes on in a new one`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "warc-writer-"));
      dirs.push(dir);
      // Each file starts with a warcinfo write; each exchange is a response and a request write (a short write
      // takes one more call). Fail exchange 1's response (call 4) and exchange 3's request (call 9 or 10).
      const injected = failingWritesOn(new Set(mode === "throw" ? [4, 9] : [4, 10]), mode);
      const writer = new WarcWriter({ dir, filenamePrefix: "rec-short", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" }, openFile: injected.openFile });
      const written: WrittenRecord[] = [];
      const failed: string[] = [];
      for (let i = 0; i < 7; i++) {
        const ex = exchange(`http://a.test/${i}`, `body ${i} `.repeat(300));
        const id = newRecordId();
        try {
          written.push(...(await writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)])));
        } catch (err) {
          expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
          failed.push(ex.url);
        }
      }
      await writer.close();
      expect(injected.calls()).toBe(mode === "throw" ? 16 : 18);
      expect(failed).toEqual(["http://a.test/1", "http://a.test/3"]);
      expect(writer.filesWritten).toHaveLength(3);
      expect(readdirSync(dir).sort()).toEqual([...writer.filesWritten].sort());

      let bytes = 0;
      const expected = [["0"], ["2"], ["4", "5", "6"]];
      for (const [n, file] of writer.filesWritten.entries()) {
        const content = readFileSync(join(dir, file));
        bytes += content.length;
        // Each file is exactly warcinfo + its whole exchanges, back to back: no gap, no half record.
        const members = gzipMembers(content);
        const records = readWarcRecords(join(dir, file));
        expect(records.map((r) => r.headers.get("warc-target-uri") ?? "warcinfo")).toEqual(["warcinfo", ...expected[n]!.flatMap((i) => [`http://a.test/${i}`, `http://a.test/${i}`])]);
        expect(members.map((m) => [m.offset, m.length])).toEqual(records.map((r) => [r.offset, r.length]));
        const inFile = written.filter((w) => w.filename === file);
        expect(inFile.map((w) => [w.offset, w.length])).toEqual(records.slice(1).map((r) => [r.offset, r.length]));

        // Every CDXJ line's offset and length read back one whole record of that URL.
        const lines = await indexWarcFiles([join(dir, file)]);
        expect(lines).toHaveLength(expected[n]!.length);
        for (const line of lines) {
          const { json } = parseCdxjLine(line);
          const offset = Number(json.offset);
          const record = parseRecord(gunzipSync(content.subarray(offset, offset + Number(json.length))));
          expect(record.headers.get("warc-target-uri")).toBe(json.url);
          expect(record.headers.get("warc-type")).toBe("response");
        }
      }
      expect(writer.bytesWritten).toBe(bytes);
    });
  }
});

describe("WARC writer of a process fenced mid-batch", () => {
  it("a batch whose writes landed after the fence (the process stopped between its check and its write) is cut off, the file back to its last whole batch", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-"));
    dirs.push(dir);
    let fenced = false;
    let writes = 0;
    // Each file starts with a warcinfo write; each exchange is a response and a request write. The fence lands
    // while exchange 1's request (call 5) is being written: its check had passed, the write goes through.
    const openFile = filesWith((file) => ({
      write: async (buffer, offset, length, position) => {
        writes += 1;
        const result = await file.write(buffer, offset, length, position);
        if (writes === 5) fenced = true;
        return result;
      },
    }));
    const beforeWrite = async () => {
      if (fenced) throw new Error("fenced");
    };
    const writer = new WarcWriter({ dir, filenamePrefix: "rec-fenced", rolloverSize: 1e9, owner: "test", warcinfo: { software: "test" }, openFile, beforeWrite });
    const batch = async (i: number) => {
      const ex = exchange(`http://a.test/${i}`, `body ${i} `.repeat(300));
      const id = newRecordId();
      return writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)]);
    };
    const first = await batch(0);
    await expect(batch(1)).rejects.toThrow("fenced");
    await expect(batch(2)).rejects.toThrow("fenced");
    await writer.close();
    expect(writes).toBe(5);
    const [file] = writer.filesWritten;
    const records = readWarcRecords(join(dir, file!));
    expect(records.map((r) => r.headers.get("warc-target-uri") ?? "warcinfo")).toEqual(["warcinfo", "http://a.test/0", "http://a.test/0"]);
    const last = first[first.length - 1]!;
    expect(readFileSync(join(dir, file!)).length).toBe(last.offset + last.length);
  });
});

describe("WARC file names", () => {
  it("two writers on one folder with the same tag and clock (replicas all pid 1) each get their own files, no record lost", async () => {
    const dir = mkdtempSync(join(tmpdir(), "warc-writer-"));
    dirs.push(dir);
    const now = () => new Date("2026-03-04T05:06:07.089Z");
    const writers = ["a", "b"].map(
      (host) => [host, new WarcWriter({ dir, filenamePrefix: "rec-same", uniqueTag: "1", now, rolloverSize: 3000, owner: host, warcinfo: { software: host } })] as const,
    );
    const written = await Promise.all(writers.map(async ([host, writer]) => {
      const records: WrittenRecord[] = [];
      for (let i = 0; i < 5; i++) {
        const ex = exchange(`http://${host}.test/${i}`, `body ${host} ${i} `.repeat(200));
        const id = newRecordId();
        records.push(...(await writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)])));
      }
      await writer.close();
      return records;
    }));
    const files = readdirSync(dir).sort();
    const [a, b] = writers.map(([, w]) => w.filesWritten);
    expect(a.length).toBeGreaterThan(1);
    expect(files).toEqual([...a, ...b].sort());
    expect(new Set(files).size).toBe(a.length + b.length);
    expect(files).toContain("rec-same-20260304050607089-1.warc.gz");
    for (const [i, [host]] of writers.entries()) {
      const urls = writers[i][1].filesWritten.flatMap((file) => {
        const records = readWarcRecords(join(dir, file));
        expect(records[0].headers.get("warc-filename")).toBe(file);
        return records.filter((r) => r.headers.get("warc-type") === "response").map((r) => r.headers.get("warc-target-uri"));
      });
      expect(urls).toEqual([0, 1, 2, 3, 4].map((n) => `http://${host}.test/${n}`));
      for (const w of written[i]) {
        const record = readWarcRecords(join(dir, w.filename)).find((r) => r.offset === w.offset)!;
        expect(record.headers.get("warc-record-id")).toBe(w.recordId);
      }
    }
  });
});
