import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WARCParser, WARCRecord } from "warcio";
import { WARCSerializer } from "warcio/node";
import { combineWarcFiles } from "../../../src/archive/combineWarcs.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A WARC file of `n` resource records of `size` bytes each (sizes differ by file, so the order is known). */
async function warcFile(path: string, n: number, size: number): Promise<string[]> {
  const ids: string[] = [];
  const parts: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const record = WARCRecord.create({ url: `urn:test:${path}:${i}`, type: "resource", warcVersion: "WARC/1.1", warcHeaders: { "Content-Type": "application/octet-stream" } }, [Buffer.alloc(size, i)]);
    ids.push(record.warcHeader("WARC-Record-ID") ?? "");
    parts.push(await WARCSerializer.serialize(record, { gzip: true }));
  }
  writeFileSync(path, Buffer.concat(parts));
  return ids;
}

async function recordIds(path: string): Promise<{ type: string; id: string; filename: string | null }[]> {
  const out = [];
  for await (const record of new WARCParser([readFileSync(path)])) {
    await record.readFully();
    out.push({ type: record.warcType ?? "", id: record.warcHeader("WARC-Record-ID") ?? "", filename: record.warcHeader("WARC-Filename") ?? null });
  }
  return out;
}

describe("combineWarcFiles (--combineWARC)", () => {
  it("groups files largest first, starting a new combined file when the next would reach the rollover size", async () => {
    const dir = mkdtempSync(join(tmpdir(), "combine-"));
    dirs.push(dir);
    const files: Record<string, string[]> = {};
    for (const [name, n] of [["a.warc.gz", 1], ["b.warc.gz", 3], ["c.warc.gz", 2], ["d.warc.gz", 5]] as const) {
      files[name] = await warcFile(join(dir, name), n, 50);
    }
    const size = (name: string) => statSync(join(dir, name)).size;
    // d (5 records) + b (3) fit under the limit, c (2) would pass it: c and a (1) go into the second file.
    const rolloverSize = size("d.warc.gz") + size("b.warc.gz") + 600;
    expect(size("d.warc.gz") + size("b.warc.gz") + size("c.warc.gz") + 400).toBeGreaterThan(rolloverSize);
    // A combined file of an earlier run that this one does not make again is removed.
    writeFileSync(join(dir, "coll_5.warc.gz"), "stale");
    const names = await combineWarcFiles({
      warcFiles: ["a", "b", "c", "d"].map((f) => join(dir, `${f}.warc.gz`)), outputDir: dir, collection: "coll", rolloverSize, warcinfo: { operator: "Op" },
    });
    expect(names).toEqual(["coll_0.warc.gz", "coll_1.warc.gz"]);
    expect(readdirSync(dir).filter((f) => f.startsWith("coll")).sort()).toEqual(names);
    const first = await recordIds(join(dir, "coll_0.warc.gz"));
    expect(first[0]).toMatchObject({ type: "warcinfo", filename: "coll_0.warc.gz" });
    expect(first.slice(1).map((r) => r.id)).toEqual([...files["d.warc.gz"], ...files["b.warc.gz"]]);
    const second = await recordIds(join(dir, "coll_1.warc.gz"));
    expect(second[0]).toMatchObject({ type: "warcinfo", filename: "coll_1.warc.gz" });
    expect(second.slice(1).map((r) => r.id)).toEqual([...files["c.warc.gz"], ...files["a.warc.gz"]]);
    // The inputs' bytes, as they are, after the warcinfo record.
    const bytes = readFileSync(join(dir, "coll_1.warc.gz"));
    const tail = Buffer.concat([readFileSync(join(dir, "c.warc.gz")), readFileSync(join(dir, "a.warc.gz"))]);
    expect(bytes.subarray(bytes.length - tail.length).equals(tail)).toBe(true);
  });

  it("no WARC files: no combined file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "combine-"));
    dirs.push(dir);
    expect(await combineWarcFiles({ warcFiles: [], outputDir: dir, collection: "coll", rolloverSize: 1e9, warcinfo: {} })).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
  });
});
