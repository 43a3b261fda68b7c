// The CDXJ lines of a WACZ are sorted with bounded memory: sorted runs spilled to temp files and
// merged. Output must be byte-identical to the in-memory sort, and no temp file may remain.
import { appendFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WARCRecord, WARCSerializer } from "warcio";
import { indexWarcFiles, iterCdxjLines, sortCdxjLines, sortLinesExternally, writeWacz } from "../../../src/wacz/index.js";
import { readZip } from "../../helpers/zip.js";

let dir: string;
let warc: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "external-sort-"));
  warc = join(dir, "a.warc.gz");
  // Hosts and paths in scrambled order, some non-ASCII (bytewise UTF-8 order differs from UTF-16 order for these).
  const paths = ["é", "z", "ä", "𝄞", "\uff21", "a", "ß", "~"];
  for (let i = 0; i < 400; i++) {
    const url = `https://h${(i * 37) % 23}.example/${paths[i % paths.length]}/${(i * 7919) % 400}`;
    const date = new Date(Date.UTC(2025, 0, 1, 0, 0, (i * 13) % 60)).toISOString();
    const record = WARCRecord.create(
      { url, date, type: "response", warcVersion: "WARC/1.1", statusline: "HTTP/1.1 200 OK", httpHeaders: { "Content-Type": "text/html" } },
      [new TextEncoder().encode(`body ${i}`)],
    );
    await appendFile(warc, await WARCSerializer.serialize(record, { gzip: true }));
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("external sort of CDXJ lines", () => {
  it("spills several runs, merges them into exactly the in-memory order, and removes its files", async () => {
    const expected = await indexWarcFiles([warc]);
    const scratch = await mkdtemp(join(dir, "scratch-"));
    const sorted = await sortLinesExternally(iterCdxjLines([warc]), { tmpDir: scratch, runBytes: 4000 });
    const [work] = await readdir(scratch);
    const runs = await readdir(join(scratch, work!));
    expect(runs.length).toBeGreaterThan(5);
    const got: string[] = [];
    for await (const line of sorted.lines()) got.push(line);
    expect(got).toEqual(expected);
    expect(sorted.count).toBe(400);
    expect(sorted.bytes).toBe(Buffer.byteLength(expected.join("\n") + "\n"));
    expect(await readdir(scratch)).toEqual([]);
    // The reference itself is the bytewise order.
    expect(sortCdxjLines([...expected].reverse())).toEqual(expected);
  });

  it.each([
    ["plain", 1e9],
    ["ZipNum", 0],
  ])("a WACZ (%s index) written with tiny sort runs is byte-identical in its index to one sorted in memory", async (_label, threshold) => {
    const scratch = await mkdtemp(join(dir, "scratch-"));
    const small = join(dir, `small-${threshold}.wacz`);
    const whole = join(dir, `whole-${threshold}.wacz`);
    await writeWacz({ outputPath: small, warcFiles: [warc], software: "t", zipNumThresholdBytes: threshold, tmpDir: scratch, sortRunBytes: 3000 });
    await writeWacz({ outputPath: whole, warcFiles: [warc], software: "t", zipNumThresholdBytes: threshold });
    const [a, b] = [await readZip(small), await readZip(whole)];
    const indexNames = [...a.keys()].filter((n) => n.startsWith("indexes/"));
    expect(indexNames).toEqual(threshold ? ["indexes/index.cdxj"] : ["indexes/index.cdx.gz", "indexes/index.idx"]);
    for (const name of indexNames) expect(a.get(name)!.data.equals(b.get(name)!.data), name).toBe(true);
    expect(await readdir(scratch)).toEqual([]);
  });

  it("removes its runs when the input fails part-way", async () => {
    const scratch = await mkdtemp(join(dir, "scratch-"));
    async function* failing(): AsyncGenerator<string> {
      for (let i = 0; i < 500; i++) yield `k${i % 97} 2025 {"url":"https://x/${i}"}`;
      throw new Error("disk gone");
    }
    await expect(sortLinesExternally(failing(), { tmpDir: scratch, runBytes: 2000 })).rejects.toThrow("disk gone");
    expect(await readdir(scratch)).toEqual([]);
  });
});
