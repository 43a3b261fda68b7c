/**
 * What it costs that a record counts as written only once it is on disk (issue 28 item 9, WarcWriter's
 * `durable`): the same records written through one WarcWriter by `--concurrency` exchanges at a time (a
 * crawl's tabs and fetches), with fdatasync group commit and without. Prints one JSON line: per mode the
 * seconds, ms per record batch (a response and its request), syncs made, and the cost per batch.
 *   node dist/bench/durableWrites.js [--batches 3000] [--bodyKb 16] [--concurrency 16] [--dir /tmp]
 * --dir: where the files go (the disk a crawl would write to; tmpfs makes syncs free).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Exchange } from "../src/archive/exchange.js";
import { payloadDigest } from "../src/archive/digest.js";
import { newRecordId, requestRecord, responseRecord } from "../src/archive/records.js";
import { WarcWriter } from "../src/archive/warcWriter.js";
import { openLogFile } from "../src/durable/appendLog.js";

const { values } = parseArgs({ options: { batches: { type: "string", default: "3000" }, bodyKb: { type: "string", default: "16" }, concurrency: { type: "string", default: "16" }, dir: { type: "string", default: tmpdir() } } });
const batches = Number(values.batches);
const concurrency = Number(values.concurrency);
const bodies = Array.from({ length: 64 }, () => new Uint8Array(randomBytes(Number(values.bodyKb) * 1024)));

async function run(durable: boolean): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(values.dir, "durable-writes-"));
  let syncs = 0;
  const writer = new WarcWriter({
    dir, filenamePrefix: "bench", rolloverSize: 1e9, owner: "bench", warcinfo: { software: "bench" }, durable,
    openFile: async (path, flags) => {
      const file = await openLogFile(path, flags);
      return {
        write: (buffer, offset, length, position) => file.write(buffer, offset, length, position),
        read: (buffer, offset, length, position) => file.read(buffer, offset, length, position),
        truncate: (length) => file.truncate(length),
        stat: () => file.stat(),
        close: () => file.close(),
        datasync: async () => {
          syncs += 1;
          await file.datasync();
        },
      };
    },
  });
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < batches) {
      const n = next++;
      const exchange: Exchange = {
        url: `http://bench.test/${n}`, method: "GET", requestHeaders: [["Accept", "*/*"]], postData: null, status: 200, statusText: "OK", httpVersion: "HTTP/1.1",
        responseHeaders: [["Content-Type", "image/png"]], body: { kind: "bytes", bytes: bodies[n % bodies.length]! }, bodyDecoded: true, date: new Date(), resourceType: "Image",
      };
      const id = newRecordId();
      await writer.writeRecords([responseRecord(exchange, id, await payloadDigest(exchange.body)), requestRecord(exchange, id)]);
    }
  }));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await writer.close();
  rmSync(dir, { recursive: true, force: true });
  return { seconds: round(seconds), msPerBatch: round((seconds * 1000) / batches, 3), syncs, batchesPerSync: syncs ? round(batches / syncs, 1) : 0 };
}

function round(value: number, digits = 2): number {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

const plain = await run(false);
const durable = await run(true);
console.log(JSON.stringify({
  benchmark: "durableWrites", dir: values.dir, batches, bodyKb: Number(values.bodyKb), concurrency, plain, durable,
  costMsPerBatch: round(durable.msPerBatch - plain.msPerBatch, 3), ratio: round(durable.seconds / plain.seconds),
}));
