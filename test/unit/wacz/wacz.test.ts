import { createHash } from "node:crypto";
import { appendFile, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

import { afterAll, describe, expect, it } from "vitest";
import { WARCParser, WARCRecord, WARCSerializer, type WARCType } from "warcio";
import yauzl from "yauzl";
import { readZip } from "../../helpers/zip.js";

import {
  DEFAULT_ZIPNUM_THRESHOLD_BYTES,
  PAGES_HEADER_LINE,
  ZIPNUM_META_LINE,
  indexWarcFiles,
  cdxjLineParts as parseCdxjLine,
  sortCdxjLines,
  writeWacz,
  type DataPackage,
  type RelationRequirement,
} from "../../../src/wacz/index.js";

// ---------------------------------------------------------------- helpers

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wacz-test-"));
  tempDirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const d of tempDirs) await rm(d, { recursive: true, force: true });
});

const enc = new TextEncoder();
const sha256 = (b: Uint8Array | string): string => createHash("sha256").update(b).digest("hex");

interface Written {
  url: string;
  type: WARCType;
  offset: number;
  length: number;
}

/** Appends records to one .warc.gz, each its own gzip member, remembering where each went. */
class TestWarc {
  readonly written: Written[] = [];
  private pos = 0;
  constructor(readonly path: string) {}

  async add(record: WARCRecord): Promise<Written> {
    const bytes = await WARCSerializer.serialize(record, { gzip: true });
    await appendFile(this.path, bytes);
    const w = { url: record.warcTargetURI ?? "", type: record.warcType, offset: this.pos, length: bytes.length };
    this.pos += bytes.length;
    this.written.push(w);
    return w;
  }

  async warcinfo(): Promise<void> {
    await this.add(
      WARCRecord.createWARCInfo(
        { filename: this.path.split("/").pop(), warcVersion: "WARC/1.1" },
        { software: "wacz-test", format: "WARC File Format 1.1" },
      ),
    );
  }

  async exchange(url: string, date: string, body: Uint8Array, contentType = "text/html", withRequest = true): Promise<WARCRecord> {
    const u = new URL(url);
    if (withRequest) {
      await this.add(
        WARCRecord.create({
          url, date, type: "request", warcVersion: "WARC/1.1",
          statusline: `GET ${u.pathname}${u.search} HTTP/1.1`,
          httpHeaders: { Host: u.host },
        }),
      );
    }
    const resp = WARCRecord.create(
      {
        url, date, type: "response", warcVersion: "WARC/1.1",
        statusline: "HTTP/1.1 200 OK",
        httpHeaders: { "Content-Type": contentType, "Content-Length": String(body.length) },
      },
      [body],
    );
    await this.add(resp);
    return resp;
  }
}

/** Where a stored entry's bytes start in the zip file (what a range-reading client computes). */
function dataStart(waczBytes: Buffer, entry: yauzl.Entry): number {
  const h = entry.relativeOffsetOfLocalHeader;
  expect(waczBytes.readUInt32LE(h)).toBe(0x04034b50);
  return h + 30 + waczBytes.readUInt16LE(h + 26) + waczBytes.readUInt16LE(h + 28);
}

function isSortedBytewise(lines: string[]): boolean {
  for (let i = 1; i < lines.length; i++) {
    if (Buffer.compare(Buffer.from(lines[i - 1]!), Buffer.from(lines[i]!)) > 0) return false;
  }
  return true;
}

function cdxjLinesOf(text: string): string[] {
  return text.split("\n").filter((l) => l.length > 0);
}

/** Check one CDXJ line against the WARC bytes it points into. */
async function checkLineAgainstWarc(line: string, warcs: Map<string, Buffer>): Promise<WARCRecord> {
  const { urlkey, timestamp, json } = parseCdxjLine(line);
  expect(urlkey).toMatch(/\)\//);
  expect(timestamp).toMatch(/^\d{14}$/);
  for (const k of ["offset", "length", "status"]) expect(typeof json[k]).toBe("string");
  const warc = warcs.get(json["filename"] as string);
  expect(warc, `filename ${String(json["filename"])}`).toBeDefined();
  const offset = Number(json["offset"]);
  const length = Number(json["length"]);
  const slice = warc!.subarray(offset, offset + length);
  // starts a gzip member, ends where the next member (or the file) starts, decodes whole
  expect([slice[0], slice[1]]).toEqual([0x1f, 0x8b]);
  if (offset + length < warc!.length) {
    expect([warc![offset + length], warc![offset + length + 1]]).toEqual([0x1f, 0x8b]);
  }
  expect(() => gunzipSync(slice)).not.toThrow();
  const records: WARCRecord[] = [];
  for await (const r of new WARCParser([slice])) {
    await r.readFully();
    records.push(r);
  }
  expect(records).toHaveLength(1);
  const rec = records[0]!;
  expect(rec.warcTargetURI).toBe(json["url"]);
  expect(rec.warcPayloadDigest).toBe(`sha256:${String(json["digest"])}`);
  return rec;
}

// ---------------------------------------------------------------- fixtures

const D1 = "2024-05-01T10:00:00.123456Z";
const D2 = "2024-05-02T11:30:00.5Z";

async function makeTwoWarcs(dir: string): Promise<{ a: TestWarc; b: TestWarc; origDigest: string }> {
  const b = new TestWarc(join(dir, "crawl-b.warc.gz"));
  await b.warcinfo();
  const orig = await b.exchange("https://example.com/static/orig.js", D1, enc.encode("console.log('orig');"), "application/javascript");
  const origDigest = orig.warcPayloadDigest!;
  await b.exchange("https://example.com/caf%C3%A9?q=%E2%9C%93", D1, enc.encode("unicode"), "text/plain; charset=utf-8");

  const a = new TestWarc(join(dir, "crawl-a.warc.gz"));
  await a.warcinfo();
  await a.exchange("https://example.com/", D1, enc.encode("<html><a href=/page2>x</a></html>"), "text/html; charset=utf-8");
  await a.exchange("https://example.com/page2?b=2&a=1", D1, enc.encode("<html>page2</html>"));
  await a.exchange("https://example.com/img.png", D1, new Uint8Array([137, 80, 78, 71, 1, 2, 3]), "image/png", false);
  // identical-payload-digest revisit: http header block only, refers to the original capture
  await a.add(
    WARCRecord.create({
      url: "https://example.com/static/dup.js", date: D2, type: "revisit", warcVersion: "WARC/1.1",
      statusline: "HTTP/1.1 200 OK",
      httpHeaders: { "Content-Type": "application/javascript" },
      refersToUrl: "https://example.com/static/orig.js",
      refersToDate: D1,
      warcHeaders: { "WARC-Payload-Digest": origDigest },
    }),
  );
  // a request whose response was never written: must not be indexed
  await a.add(
    WARCRecord.create({
      url: "https://example.com/orphan", date: D2, type: "request", warcVersion: "WARC/1.1",
      statusline: "GET /orphan HTTP/1.1", httpHeaders: { Host: "example.com" },
    }),
  );
  // POST: indexed under a __wb_method=post key
  await a.add(
    WARCRecord.create(
      {
        url: "https://example.com/api", date: D2, type: "request", warcVersion: "WARC/1.1",
        statusline: "POST /api HTTP/1.1",
        httpHeaders: { Host: "example.com", "Content-Type": "application/x-www-form-urlencoded" },
      },
      [enc.encode("x=1&y=2")],
    ),
  );
  await a.exchange("https://example.com/api", D2, enc.encode('{"ok":true}'), "application/json", false);
  return { a, b, origDigest };
}

// ---------------------------------------------------------------- tests

describe("writeWacz: plain index", () => {
  it("writes a stored WACZ whose datapackage, digest and CDXJ all check out", async () => {
    const dir = await tempDir();
    const { a, b, origDigest } = await makeTwoWarcs(dir);

    const pagesFile = join(dir, "pages.jsonl");
    await writeFile(
      pagesFile,
      [
        PAGES_HEADER_LINE,
        JSON.stringify({ id: "p1", url: "https://example.com/", ts: "2024-05-01T10:00:01Z", title: "Home", seed: true, depth: 0 }),
        JSON.stringify({ id: "p2", url: "https://example.com/page2?b=2&a=1", ts: "2024-05-01T10:00:02Z", seed: true, depth: 0 }),
      ].join("\n") + "\n",
    );
    const extraPagesFile = join(dir, "extraPages.jsonl");
    await writeFile(
      extraPagesFile,
      '{"format": "json-pages-1.0", "id": "extra-pages", "title": "Extra Pages"}\n' +
        JSON.stringify({ url: "https://example.com/img.png", ts: "2024-05-01T10:00:03Z", depth: 1 }) + "\n",
    );
    const changes = join(dir, "changes.jsonl");
    await writeFile(changes, '{"url":"https://example.com/","change":"new"}\n');

    const outputPath = join(dir, "crawl.wacz");
    const res = await writeWacz({
      outputPath,
      warcFiles: [a.path, b.path],
      pagesFile,
      extraPagesFile,
      extraEntries: [{ zipPath: "reports/changes.jsonl", sourcePath: changes }],
      software: "wacz-test 1.0",
      title: "Test crawl",
      description: "fixture",
    });

    // result, and no temp file left next to the output
    const waczBytes = await readFile(outputPath);
    expect(res.path).toBe(outputPath);
    expect(res.filename).toBe("crawl.wacz");
    expect(res.size).toBe(waczBytes.length);
    expect(res.hash).toBe(`sha256:${sha256(waczBytes)}`);
    expect((await readdir(dir)).filter((n) => n.includes(".tmp-"))).toEqual([]);

    const entries = await readZip(outputPath);
    expect([...entries.keys()].sort()).toEqual(
      [
        "archive/crawl-a.warc.gz",
        "archive/crawl-b.warc.gz",
        "datapackage-digest.json",
        "datapackage.json",
        "indexes/index.cdxj",
        "pages/extraPages.jsonl",
        "pages/pages.jsonl",
        "reports/changes.jsonl",
      ].sort(),
    );
    for (const [name, { entry }] of entries) {
      expect(entry.compressionMethod, name).toBe(0);
      expect(entry.compressedSize, name).toBe(entry.uncompressedSize);
    }

    // WARCs stored byte-identical, and readable by range straight out of the zip file
    for (const w of [a, b]) {
      const src = await readFile(w.path);
      const e = entries.get(`archive/${w.path.split("/").pop()}`)!;
      expect(e.data.equals(src)).toBe(true);
      const start = dataStart(waczBytes, e.entry);
      expect(waczBytes.subarray(start, start + src.length).equals(src)).toBe(true);
    }
    expect(entries.get("pages/pages.jsonl")!.data.equals(await readFile(pagesFile))).toBe(true);
    expect(entries.get("pages/extraPages.jsonl")!.data.equals(await readFile(extraPagesFile))).toBe(true);
    expect(entries.get("reports/changes.jsonl")!.data.equals(await readFile(changes))).toBe(true);

    // datapackage.json
    const dpBytes = entries.get("datapackage.json")!.data;
    const dp = JSON.parse(dpBytes.toString("utf8")) as DataPackage;
    expect(dp.profile).toBe("data-package");
    expect(dp.wacz_version).toBe("1.1.1");
    expect(dp.software).toBe("wacz-test 1.0");
    expect(dp.title).toBe("Test crawl");
    expect(dp.description).toBe("fixture");
    expect(dp.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
    expect(dp.mainPageUrl).toBe("https://example.com/");
    expect(dp.mainPageDate).toBe("2024-05-01T10:00:01Z");
    expect(dp).not.toHaveProperty("relation");
    const resourcePaths = dp.resources.map((r) => r.path).sort();
    expect(resourcePaths).toEqual(
      [...entries.keys()].filter((n) => n !== "datapackage.json" && n !== "datapackage-digest.json").sort(),
    );
    for (const r of dp.resources) {
      const data = entries.get(r.path)!.data;
      expect(r.name).toBe(r.path.split("/").pop());
      expect(r.bytes, r.path).toBe(data.length);
      expect(r.hash, r.path).toBe(`sha256:${sha256(data)}`);
    }

    // datapackage-digest.json
    const digest = JSON.parse(entries.get("datapackage-digest.json")!.data.toString("utf8")) as Record<string, unknown>;
    expect(digest).toEqual({ path: "datapackage.json", hash: `sha256:${sha256(dpBytes)}` });

    // CDXJ
    const lines = cdxjLinesOf(entries.get("indexes/index.cdxj")!.data.toString("utf8"));
    expect(entries.get("indexes/index.cdxj")!.data.toString("utf8").endsWith("\n")).toBe(true);
    expect(res.cdxLines).toBe(lines.length);
    expect(isSortedBytewise(lines)).toBe(true);
    const urls = lines.map((l) => parseCdxjLine(l).json["url"]).sort();
    // responses + revisit + POST response; no warcinfo, no request records, no orphan request
    expect(urls).toEqual(
      [
        "https://example.com/",
        "https://example.com/api",
        "https://example.com/caf%C3%A9?q=%E2%9C%93",
        "https://example.com/img.png",
        "https://example.com/page2?b=2&a=1",
        "https://example.com/static/dup.js",
        "https://example.com/static/orig.js",
      ].sort(),
    );

    const warcs = new Map<string, Buffer>();
    for (const w of [a, b]) warcs.set(w.path.split("/").pop()!, await readFile(w.path));
    for (const line of lines) {
      const rec = await checkLineAgainstWarc(line, warcs);
      const { json } = parseCdxjLine(line);
      // the line points at the very member we wrote for that URL's response/revisit
      const filename = json["filename"] as string;
      const w = (filename === "crawl-a.warc.gz" ? a : b).written.find((x) => x.offset === Number(json["offset"]))!;
      expect(w.length).toBe(Number(json["length"]));
      expect(["response", "revisit"]).toContain(w.type);
      expect(rec.warcType).toBe(w.type);
    }

    const revisit = lines.map(parseCdxjLine).find((l) => l.json["url"] === "https://example.com/static/dup.js")!;
    expect(revisit.json["mime"]).toBe("warc/revisit");
    expect(revisit.json["status"]).toBe("200");
    expect(revisit.json["digest"]).toBe(origDigest.replace(/^sha256:/, ""));
    expect(revisit.json["filename"]).toBe("crawl-a.warc.gz");

    const home = lines.map(parseCdxjLine).find((l) => l.json["url"] === "https://example.com/")!;
    expect(home.urlkey).toBe("com,example)/");
    expect(home.timestamp).toBe("20240501100000");
    expect(home.json["mime"]).toBe("text/html");

    const post = lines.map(parseCdxjLine).find((l) => l.json["url"] === "https://example.com/api")!;
    expect(post.urlkey).toBe("com,example)/api?__wb_method=post&x=1&y=2");
    expect(post.json["method"]).toBe("POST");
  });

  it("writes a header-only pages.jsonl without pages, drops an empty extraPages, adds a missing header", async () => {
    const dir = await tempDir();
    const { a } = await makeTwoWarcs(dir);
    const emptyExtra = join(dir, "extra.jsonl");
    await writeFile(emptyExtra, '{"format": "json-pages-1.0", "id": "extra-pages", "title": "Extra Pages"}\n');

    const out1 = join(dir, "nopages.wacz");
    await writeWacz({ outputPath: out1, warcFiles: [a.path], extraPagesFile: emptyExtra, software: "t" });
    const e1 = await readZip(out1);
    expect(e1.get("pages/pages.jsonl")!.data.toString("utf8")).toBe(PAGES_HEADER_LINE + "\n");
    expect(e1.has("pages/extraPages.jsonl")).toBe(false);
    const dp1 = JSON.parse(e1.get("datapackage.json")!.data.toString("utf8")) as DataPackage;
    expect(dp1).not.toHaveProperty("mainPageUrl");
    expect(dp1).not.toHaveProperty("mainPageDate");
    expect(dp1).not.toHaveProperty("title");

    // a pages file without header gets one; explicit mainPage wins over the first page
    const headless = join(dir, "headless.jsonl");
    const pageLine = JSON.stringify({ url: "https://example.com/page2?b=2&a=1", ts: "2024-05-01T10:00:02Z" });
    await writeFile(headless, pageLine + "\n");
    const out2 = join(dir, "headless.wacz");
    await writeWacz({
      outputPath: out2, warcFiles: [a.path], pagesFile: headless, software: "t",
      mainPageUrl: "https://example.com/", mainPageDate: "2024-05-01T10:00:00Z",
    });
    const e2 = await readZip(out2);
    expect(e2.get("pages/pages.jsonl")!.data.toString("utf8")).toBe(PAGES_HEADER_LINE + "\n" + pageLine + "\n");
    const dp2 = JSON.parse(e2.get("datapackage.json")!.data.toString("utf8")) as DataPackage;
    expect(dp2.mainPageUrl).toBe("https://example.com/");
    expect(dp2.mainPageDate).toBe("2024-05-01T10:00:00Z");
  });

  it("includes relation.requires only when requirements are given", async () => {
    const dir = await tempDir();
    const { a } = await makeTwoWarcs(dir);
    const requires: RelationRequirement[] = [
      { filename: "older.wacz", hash: `sha256:${"ab".repeat(32)}`, size: 12345, crawlId: "crawl-1" },
    ];
    const dpOf = async (name: string, req?: RelationRequirement[]): Promise<DataPackage> => {
      const out = join(dir, name);
      await writeWacz({ outputPath: out, warcFiles: [a.path], software: "t", requires: req });
      return JSON.parse((await readZip(out)).get("datapackage.json")!.data.toString("utf8")) as DataPackage;
    };
    expect((await dpOf("with.wacz", requires)).relation).toEqual({ requires });
    expect(await dpOf("without.wacz")).not.toHaveProperty("relation");
    expect(await dpOf("empty.wacz", [])).not.toHaveProperty("relation");
  });

  it("packages concurrently without scratch-file collisions", async () => {
    const dir = await tempDir();
    const { a, b } = await makeTwoWarcs(dir);
    const outs = ["c1.wacz", "c2.wacz", "c3.wacz"].map((n) => join(dir, n));
    const results = await Promise.all(
      outs.map((outputPath, i) =>
        writeWacz({ outputPath, warcFiles: i === 1 ? [b.path] : [a.path, b.path], software: "t", zipNumThresholdBytes: i === 2 ? 1 : undefined }),
      ),
    );
    for (const [i, res] of results.entries()) {
      const entries = await readZip(outs[i]!);
      expect(res.hash).toBe(`sha256:${sha256(await readFile(outs[i]!))}`);
      expect(entries.has(i === 2 ? "indexes/index.idx" : "indexes/index.cdxj")).toBe(true);
      expect(res.cdxLines).toBe(i === 1 ? 2 : 7);
    }
  });

  it("leaves neither the final file nor a temp file behind on failure", async () => {
    const dir = await tempDir();
    const { a } = await makeTwoWarcs(dir);
    const out = join(dir, "broken.wacz");
    await expect(
      writeWacz({ outputPath: out, warcFiles: [a.path, join(dir, "missing.warc.gz")], software: "t" }),
    ).rejects.toThrow();
    await expect(
      writeWacz({
        outputPath: out, warcFiles: [a.path], software: "t",
        extraEntries: [{ zipPath: "reports/x.jsonl", sourcePath: join(dir, "nope.jsonl") }],
      }),
    ).rejects.toThrow();
    await expect(
      writeWacz({
        outputPath: out, warcFiles: [a.path], software: "t",
        extraEntries: [{ zipPath: "datapackage.json", sourcePath: a.path }],
      }),
    ).rejects.toThrow(/reserved/);
    expect((await readdir(dir)).filter((n) => n.startsWith("broken.wacz"))).toEqual([]);
  });
});

describe("writeWacz: ZipNum index", () => {
  it("splits 600 lines into 256-line gzip blocks with a correct .idx", async () => {
    const dir = await tempDir();
    const w = new TestWarc(join(dir, "big.warc.gz"));
    await w.warcinfo();
    for (let i = 0; i < 600; i++) {
      // unordered URLs so sorting matters
      const n = (i * 7919) % 600;
      await w.exchange(`https://site${n % 7}.example.org/p/${n}`, D1, enc.encode(`body ${n}`), "text/plain", i % 3 === 0);
    }
    const expected = await indexWarcFiles([w.path]);
    expect(expected).toHaveLength(600);
    expect(isSortedBytewise(expected)).toBe(true);

    const out = join(dir, "big.wacz");
    const res = await writeWacz({ outputPath: out, warcFiles: [w.path], software: "t", zipNumThresholdBytes: 1000 });
    expect(res.cdxLines).toBe(600);
    const entries = await readZip(out);
    expect(entries.has("indexes/index.cdxj")).toBe(false);
    expect(entries.get("indexes/index.cdx.gz")!.entry.compressionMethod).toBe(0);
    expect(entries.get("indexes/index.idx")!.entry.compressionMethod).toBe(0);

    const gz = entries.get("indexes/index.cdx.gz")!.data;
    const idxText = entries.get("indexes/index.idx")!.data.toString("utf8");
    expect(idxText.endsWith("\n")).toBe(true);
    const idxLines = idxText.split("\n").filter(Boolean);
    expect(idxLines[0]).toBe('!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}');
    expect(idxLines[0]).toBe(ZIPNUM_META_LINE);
    const blocks = idxLines.slice(1);
    expect(blocks).toHaveLength(3);

    const all: string[] = [];
    let expectedOffset = 0;
    for (const [i, blockLine] of blocks.entries()) {
      const [urlkey, ts, ...rest] = blockLine.split(" ");
      const meta = JSON.parse(rest.join(" ")) as Record<string, unknown>;
      expect(typeof meta["offset"]).toBe("number");
      expect(typeof meta["length"]).toBe("number");
      expect(meta["filename"]).toBe("index.cdx.gz");
      const offset = meta["offset"] as number;
      const length = meta["length"] as number;
      expect(offset).toBe(expectedOffset);
      expectedOffset += length;
      const block = gz.subarray(offset, offset + length);
      expect(meta["digest"]).toBe(`sha256:${sha256(block)}`);
      const blockLines = gunzipSync(block).toString("utf8").split("\n");
      expect(blockLines.pop()).toBe("");
      expect(blockLines).toHaveLength(i < 2 ? 256 : 600 - 512);
      expect(`${urlkey} ${ts}`).toBe(blockLines[0]!.split(" ").slice(0, 2).join(" "));
      all.push(...blockLines);
    }
    expect(expectedOffset).toBe(gz.length);
    expect(all).toEqual(expected);
    // the idx itself is sorted, so the replay client can binary-search it
    expect(isSortedBytewise(blocks)).toBe(true);

    const warcs = new Map([["big.warc.gz", await readFile(w.path)]]);
    for (const line of [all[0]!, all[255]!, all[256]!, all[599]!]) await checkLineAgainstWarc(line, warcs);
  });

  it("keeps the plain index below the default threshold", async () => {
    expect(DEFAULT_ZIPNUM_THRESHOLD_BYTES).toBe(50_000);
    const dir = await tempDir();
    const { a } = await makeTwoWarcs(dir);
    const out = join(dir, "small.wacz");
    await writeWacz({ outputPath: out, warcFiles: [a.path], software: "t" });
    const names = [...(await readZip(out)).keys()];
    expect(names).toContain("indexes/index.cdxj");
    expect(names.filter((n) => n.startsWith("indexes/"))).toHaveLength(1);
  });
});

describe("indexWarcFiles: offsets at awkward gzip member boundaries", () => {
  // warcio 2.4.11 alone gets these wrong: when a member's decompressed size is just past
  // a 64 KiB multiple and the read chunk ends inside the member's last compressed bytes,
  // the record's length and the next record's offset come out short/stale.
  it("gives exact offset/length for every record whatever the read chunk size", async () => {
    const dir = await tempDir();
    const w = new TestWarc(join(dir, "edge.warc.gz"));
    await w.warcinfo();
    let i = 0;
    for (const k of [1, 2]) {
      for (const r of [0, 1, 2, 3, 4]) {
        const url = `https://example.com/edge/${i++}`;
        // find a body size whose serialized (uncompressed) record is 65536*k + r bytes
        let bodyLen = 65536 * k - 400;
        const body = createHash("sha512").update(url).digest();
        const bytesOf = (n: number): Uint8Array => {
          const b = new Uint8Array(n);
          for (let j = 0; j < n; j++) b[j] = (body[j % 64]! ^ (j * 2654435761) >>> 24) & 0xff;
          return b;
        };
        const mk = (n: number): WARCRecord =>
          WARCRecord.create(
            { url, date: D1, type: "response", warcVersion: "WARC/1.1", httpHeaders: { "Content-Type": "application/octet-stream" } },
            [bytesOf(n)],
          );
        for (let tries = 0; tries < 5; tries++) {
          const plainLen = (await WARCSerializer.serialize(mk(bodyLen))).length;
          const want = 65536 * k + r;
          if (plainLen === want) break;
          bodyLen += want - plainLen;
        }
        const rec = mk(bodyLen);
        await w.add(rec);
        expect(gunzipSync(await readFile(w.path).then((b) => b.subarray(w.written.at(-1)!.offset))).length % 65536).toBe(r);
      }
    }
    const truth = new Map(w.written.filter((x) => x.type === "response").map((x) => [x.url, x]));
    for (const hwm of [16, 17, 1000, 65536]) {
      const lines = await indexWarcFiles([w.path], { readHighWaterMark: hwm });
      expect(lines).toHaveLength(truth.size);
      for (const line of lines) {
        const { json } = parseCdxjLine(line);
        const t = truth.get(json["url"] as string)!;
        expect({ hwm, offset: Number(json["offset"]), length: Number(json["length"]) }).toEqual({
          hwm, offset: t.offset, length: t.length,
        });
      }
    }
  });
});

describe("sortCdxjLines", () => {
  it("sorts bytewise on UTF-8, not by UTF-16 code units", () => {
    // U+FF5E is EF BD 9E in UTF-8; U+1F600 is F0 9F 98 80 but a D83D surrogate in UTF-16,
    // so JS string order puts the emoji first while byte order (LC_ALL=C) puts it last.
    const tilde = 'com,example)/a\uFF5E 20240101000000 {"url":"x"}';
    const emoji = 'com,example)/a\u{1F600} 20240101000000 {"url":"y"}';
    const upper = 'com,example)/B 20240101000000 {"url":"z"}';
    expect([tilde, emoji].sort()).toEqual([emoji, tilde]);
    expect(sortCdxjLines([emoji, tilde, upper])).toEqual([upper, tilde, emoji]);
  });
});
