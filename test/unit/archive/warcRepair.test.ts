import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { payloadDigest } from "../../../src/archive/digest.js";
import type { Exchange } from "../../../src/archive/exchange.js";
import { newRecordId, requestRecord, responseRecord } from "../../../src/archive/records.js";
import { repairUnfinishedWarcs } from "../../../src/archive/warcRepair.js";
import { openMarkerName, WarcWriter } from "../../../src/archive/warcWriter.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A writer that died after three exchanges (synced: durable) and 5 bytes into a fourth record. */
async function abandonedWarc(): Promise<{ dir: string; filename: string; wholeSize: number; marker: string }> {
  const dir = mkdtempSync(join(tmpdir(), "warc-repair-"));
  dirs.push(dir);
  const writer = new WarcWriter({ dir, filenamePrefix: "rec-repair", rolloverSize: 1e9, owner: "dead-writer", warcinfo: { software: "test" } });
  for (let i = 0; i < 3; i++) {
    const ex: Exchange = {
      url: `http://a.test/${i}`, method: "GET", requestHeaders: [], postData: null, status: 200, statusText: "OK", httpVersion: "HTTP/1.1",
      responseHeaders: [["Content-Type", "text/plain"]], body: { kind: "bytes", bytes: Buffer.from(`body ${i} `.repeat(50)) }, bodyDecoded: true, date: new Date(), resourceType: "Other",
    };
    const id = newRecordId();
    await writer.writeRecords([responseRecord(ex, id, await payloadDigest(ex.body)), requestRecord(ex, id)]);
  }
  // Never closed: the process died. Its last record was being written: a gzip member's first bytes.
  const filename = readdirSync(dir).find((f) => f.endsWith(".warc.gz"))!;
  const wholeSize = statSync(join(dir, filename)).size;
  appendFileSync(join(dir, filename), Buffer.from([0x1f, 0x8b, 0x08, 0, 0]));
  return { dir, filename, wholeSize, marker: readFileSync(join(dir, openMarkerName(filename)), "utf8") };
}

const dead = async () => false;

describe("repair of a WARC file whose writer died", () => {
  it("cuts it back to the size in its marker when the marker can be trusted (the writer died, the host did not)", async () => {
    const { dir, filename, wholeSize, marker } = await abandonedWarc();
    expect(marker.split("\n")[0]).toBe(String(wholeSize).padStart(20, "0"));
    expect(await repairUnfinishedWarcs(dir, dead, () => true)).toEqual([{ filename, truncatedBytes: 5, scanned: false }]);
    expect(statSync(join(dir, filename)).size).toBe(wholeSize);
    expect(readdirSync(dir)).toEqual([filename]);
  });

  it("after a host crash, a stale or emptied marker cuts nothing that was synced: the file ends at its last whole record (issue 28, item 9)", async () => {
    for (const staleMarker of [`${"0".padStart(20, "0")}\ndead-writer\n`, ""]) {
      const { dir, filename, wholeSize } = await abandonedWarc();
      // What the marker held before the host went down: never synced, it may be its first write, or nothing.
      writeFileSync(join(dir, openMarkerName(filename)), staleMarker);
      // The writer ran in another boot: its marker is not trusted (a marker that cannot be read never is).
      expect(await repairUnfinishedWarcs(dir, dead, (owner) => owner !== "dead-writer")).toEqual([{ filename, truncatedBytes: 5, scanned: true }]);
      expect(statSync(join(dir, filename)).size).toBe(wholeSize);
      const records = readWarcRecords(join(dir, filename));
      expect(records.map((r) => r.headers.get("warc-type"))).toEqual(["warcinfo", ...Array(3).fill(["response", "request"]).flat()]);
    }
  });
});
