import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { gunzipSync, gzipSync } from "node:zlib";

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WARCRecord, WARCSerializer } from "warcio";
import yazl from "yazl";

import { WaczIndexError, WaczReadError, iterWaczCdxj, openWacz, type WaczReader } from "../../../src/wacz/reader/index.js";
import { indexWarcFiles, parseCdxjLine as parseCdxjRecord, writeWacz } from "../../../src/wacz/index.js";
import { startRangeServer, type RangeServer } from "../../helpers/rangeServer.js";
import { readZip } from "../../helpers/zip.js";

// ---------------------------------------------------------------- helpers

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wacz-reader-test-"));
  tempDirs.push(dir);
  return dir;
}

/** A request + response pair per page; `bigBodies` adds responses with that many random body bytes each. */
async function writeWarc(path: string, pages: number, bigBodies: number[] = []): Promise<void> {
  // Serialized in memory and written once: an append per record makes the 5,000-page archive take a minute.
  const members: Uint8Array[] = [];
  // Each record its own gzip member, as warcio's { gzip: true } writes them (zlib's, much faster per record).
  const append = async (record: WARCRecord) => void members.push(gzipSync(await WARCSerializer.serialize(record)));
  const exchange = async (url: string, date: string, body: Uint8Array): Promise<void> => {
    await append(
      WARCRecord.create({
        url, date, type: "request", warcVersion: "WARC/1.1",
        statusline: `GET ${new URL(url).pathname} HTTP/1.1`,
        httpHeaders: { Host: new URL(url).host },
      }),
    );
    await append(
      WARCRecord.create(
        {
          url, date, type: "response", warcVersion: "WARC/1.1",
          statusline: "HTTP/1.1 200 OK",
          httpHeaders: { "Content-Type": "text/html" },
        },
        [body],
      ),
    );
  };
  const enc = new TextEncoder();
  for (let i = 0; i < pages; i++) {
    const date = new Date(Date.UTC(2024, 4, 1, 10, 0, i % 60, i % 1000)).toISOString();
    await exchange(`https://example.com/page/${i}?q=${i * 7}`, date, enc.encode(`<html><body>page ${i}</body></html>`));
  }
  for (const [i, size] of bigBodies.entries()) {
    await exchange(`https://big.example.org/blob-${i}.bin`, "2024-05-02T08:00:00.000Z", randomBytes(size));
  }
  await appendFile(path, Buffer.concat(members));
}

async function writeYazlZip(path: string, entries: { name: string; data: Buffer | string; compress?: boolean }[]): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const e of entries) zip.addBuffer(Buffer.from(e.data), e.name, { compress: e.compress ?? false });
  zip.end();
  await new Promise<void>((resolve, reject) => {
    const out = createWriteStream(path);
    out.on("close", () => resolve());
    out.on("error", reject);
    zip.outputStream.on("error", reject);
    zip.outputStream.pipe(out);
  });
}

async function collect(reader: WaczReader): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of iterWaczCdxj(reader)) lines.push(line);
  return lines;
}

async function withReader<T>(location: string, fn: (r: WaczReader) => Promise<T>): Promise<T> {
  const reader = await openWacz(location);
  try {
    return await fn(reader);
  } finally {
    await reader.close();
  }
}

function linesOf(text: string): string[] {
  return text.split("\n").filter((l) => l !== "");
}

/** Synthetic sorted CDXJ lines. */
function syntheticLines(n: number): string[] {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const key = String(i).padStart(6, "0");
    lines.push(
      `com,example)/item/${key} 20240501100000 ${JSON.stringify({
        url: `https://example.com/item/${key}`, mime: "text/html", status: "200",
        digest: "sha256:" + createHash("sha256").update(key).digest("hex"),
        length: "321", offset: String(i * 321), filename: "data.warc.gz",
      })}`,
    );
  }
  return lines;
}

/** ZipNum blocks of `perBlock` lines: the .cdx.gz bytes, the blocks and an .idx text. */
function zipNum(lines: string[], perBlock: number, withDigest: boolean): { gz: Buffer; blocks: Buffer[]; idx: (blocks: Buffer[]) => string } {
  const blocks: Buffer[] = [];
  for (let i = 0; i < lines.length; i += perBlock) blocks.push(gzipSync(lines.slice(i, i + perBlock).join("\n") + "\n"));
  const idx = (bs: Buffer[]): string => {
    const out = ['!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}'];
    let offset = 0;
    bs.forEach((b, i) => {
      const first = lines[i * perBlock]!.split(" ");
      const json: Record<string, unknown> = { offset, length: b.length, filename: "index.cdx.gz" };
      if (withDigest) json["digest"] = "sha256:" + createHash("sha256").update(b).digest("hex");
      out.push(`${first[0]} ${first[1]} ${JSON.stringify(json)}`);
      offset += b.length;
    });
    return out.join("\n") + "\n";
  };
  return { gz: Buffer.concat(blocks), blocks, idx };
}

const minimalDatapackage = JSON.stringify({ profile: "data-package", wacz_version: "1.1.1", resources: [] });

afterAll(async () => {
  for (const d of tempDirs) await rm(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------- small WACZ, plain index

describe("small WACZ with a plain index.cdxj", () => {
  let dir: string;
  let waczPath: string;
  let server: RangeServer;

  beforeAll(async () => {
    dir = await tempDir();
    const warc = join(dir, "small.warc.gz");
    await writeWarc(warc, 6);
    waczPath = join(dir, "small.wacz");
    await writeWacz({ outputPath: waczPath, warcFiles: [warc], software: "wacz-reader-test" });
    server = await startRangeServer(dir);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("gives the same entries, datapackage.json and index lines from a path, a file:// URL and http", async () => {
    const unzipped = await readZip(waczPath);
    expect(unzipped.has("indexes/index.cdxj")).toBe(true);
    expect(unzipped.has("indexes/index.idx")).toBe(false);
    const expectedLines = linesOf(unzipped.get("indexes/index.cdxj")!.data.toString("utf8"));
    expect(expectedLines.length).toBeGreaterThanOrEqual(6);
    const expectedDatapackage = unzipped.get("datapackage.json")!.data;
    const size = (await stat(waczPath)).size;

    for (const location of [waczPath, pathToFileURL(waczPath).href, `${server.url}small.wacz`]) {
      await withReader(location, async (reader) => {
        expect(reader.location).toBe(location);
        expect(reader.size).toBe(size);
        expect(reader.entryNames()).toEqual([...unzipped.keys()]);
        expect(reader.hasEntry("datapackage.json")).toBe(true);
        expect(reader.hasEntry("nope.txt")).toBe(false);
        expect(reader.warnings).toEqual([]);
        expect((await reader.readEntry("datapackage.json")).equals(expectedDatapackage)).toBe(true);
        expect(await collect(reader)).toEqual(expectedLines);
        // The whole WARC entry streams back byte for byte.
        const chunks: Buffer[] = [];
        for await (const c of (await reader.openEntryStream("archive/small.warc.gz")) as AsyncIterable<Buffer>) chunks.push(c);
        expect(Buffer.concat(chunks).equals(unzipped.get("archive/small.warc.gz")!.data)).toBe(true);
        expect(reader.bytesRead).toBeGreaterThan(0);
      });
    }
  });

  it("parses index lines into records", async () => {
    const lines = await withReader(waczPath, collect);
    const response = lines.map(parseCdxjRecord).find((r) => r.url === "https://example.com/page/3?q=21" && r.mime === "text/html");
    expect(response).toBeDefined();
    expect(response!.urlkey).toBe("com,example)/page/3?q=21");
    expect(response!.timestamp).toMatch(/^2024050110000\d/);
    expect(response!.status).toBe("200");
    expect(response!.digest).toMatch(/^(sha256:)?[0-9a-f]{64}$/);
    expect(response!.filename).toBe("small.warc.gz");
    expect(typeof response!.offset).toBe("string");
    expect(() => parseCdxjRecord("com,example)/ 2024 not-json")).toThrow(WaczIndexError);
    expect(() => parseCdxjRecord('com,example)/ 2024 {"mime":"text/html"}')).toThrow(/no "url"/);
  });

  it("reads a WARC record by range without touching the rest of the archive", async () => {
    const lines = await withReader(waczPath, collect);
    const rec = lines.map(parseCdxjRecord).find((r) => r.url === "https://example.com/page/4?q=28" && r.mime === "text/html")!;
    server.resetCounters();
    await withReader(`${server.url}small.wacz`, async (reader) => {
      const start = Number(rec.offset);
      const stream = await reader.openEntryStream("archive/small.warc.gz", { start, end: start + Number(rec.length) });
      const chunks: Buffer[] = [];
      for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
      const record = gunzipSync(Buffer.concat(chunks)).toString("latin1");
      expect(record).toMatch(/^WARC\/1\.1\r\n/);
      expect(record).toContain("WARC-Target-URI: https://example.com/page/4?q=28");
      expect(record).toContain("page 4");
    });
    for (const r of server.requests.filter((q) => q.method === "GET")) expect(r.range).toMatch(/^bytes=\d+-\d+$/);
  });

  it("follows redirects", async () => {
    const redirector = createServer((req, res) => {
      res.writeHead(302, { location: `${server.url}small.wacz` }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", () => resolve()));
    try {
      const { port } = redirector.address() as AddressInfo;
      const viaRedirect = await withReader(`http://127.0.0.1:${port}/moved.wacz`, collect);
      expect(viaRedirect).toEqual(await withReader(waczPath, collect));
    } finally {
      redirector.closeAllConnections();
      await new Promise<void>((resolve) => redirector.close(() => resolve()));
    }
  });

  it("refuses an entry larger than maxBytes and names missing entries", async () => {
    await withReader(waczPath, async (reader) => {
      await expect(reader.readEntry("archive/small.warc.gz", 100)).rejects.toThrow(WaczReadError);
      await expect(reader.readEntry("archive/small.warc.gz", 100)).rejects.toThrow(/more than the 100-byte limit/);
      await expect(reader.readEntry("missing.json")).rejects.toThrow(/: no entry missing\.json$/);
    });
  });
});

// ---------------------------------------------------------------- large WACZ, ZipNum, over HTTP

describe("large WACZ with a ZipNum index, over HTTP", () => {
  let dir: string;
  let waczPath: string;
  let warcPath: string;
  let server: RangeServer;
  let cdxLines: number;

  beforeAll(async () => {
    dir = await tempDir();
    warcPath = join(dir, "large.warc.gz");
    // 12 MB of incompressible bodies plus enough small pages that index.cdx.gz (~20 blocks
    // of 256 lines) is bigger than the reader's 64 KiB read-ahead and must be streamed.
    await writeWarc(warcPath, 5000, [3_000_000, 3_000_000, 3_000_000, 3_000_000]);
    waczPath = join(dir, "large.wacz");
    const result = await writeWacz({ outputPath: waczPath, warcFiles: [warcPath], software: "wacz-reader-test", zipNumThresholdBytes: 1000 });
    cdxLines = result.cdxLines;
    server = await startRangeServer(dir);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("yields exactly all lines in order while reading under 5% of the archive", async () => {
    const unzipped = await readZip(waczPath);
    expect(unzipped.has("indexes/index.idx")).toBe(true);
    expect(unzipped.has("indexes/index.cdx.gz")).toBe(true);
    expect(unzipped.has("indexes/index.cdxj")).toBe(false);
    const blocks = linesOf(unzipped.get("indexes/index.idx")!.data.toString("utf8")).length - 1;
    expect(blocks).toBeGreaterThanOrEqual(15);
    expect(unzipped.get("indexes/index.cdx.gz")!.data.length).toBeGreaterThan(128 * 1024);
    const expected = linesOf(gunzipSync(unzipped.get("indexes/index.cdx.gz")!.data).toString("utf8"));
    expect(expected).toEqual(await indexWarcFiles([warcPath]));
    expect(expected.length).toBe(cdxLines);

    server.resetCounters();
    const reader = await openWacz(`${server.url}large.wacz`);
    let lines: string[];
    try {
      expect(reader.size).toBe((await stat(waczPath)).size);
      lines = await collect(reader);
      const dp = JSON.parse((await reader.readEntry("datapackage.json")).toString("utf8")) as { wacz_version: string };
      expect(dp.wacz_version).toBe("1.1.1");
    } finally {
      await reader.close();
    }
    expect(lines).toEqual(expected);

    const readFraction = reader.bytesRead / reader.size;
    const servedFraction = server.bytesServed / reader.size;
    console.log(
      `large WACZ: size ${reader.size} B, bytesRead ${reader.bytesRead} B (${(readFraction * 100).toFixed(2)}%), ` +
        `bytesServed ${server.bytesServed} B (${(servedFraction * 100).toFixed(2)}%), ${server.requests.length} requests, ${blocks} ZipNum blocks`,
    );
    expect(reader.size).toBeGreaterThan(12_000_000);
    expect(readFraction).toBeLessThan(0.05);
    expect(servedFraction).toBeLessThan(0.05);
    expect(server.bytesServed).toBe(reader.bytesRead);
    // Every GET is a bounded range request, and there are few of them.
    const gets = server.requests.filter((r) => r.method === "GET");
    for (const r of gets) expect(r.range).toMatch(/^bytes=\d+-\d+$/);
    expect(server.requests.length).toBeLessThan(10);
  });

  it("gives the same lines from the local file, reading little of it", async () => {
    const reader = await openWacz(waczPath);
    try {
      const lines = await collect(reader);
      expect(lines.length).toBe(cdxLines);
      expect(reader.bytesRead / reader.size).toBeLessThan(0.05);
    } finally {
      await reader.close();
    }
  });

  it("stops reading when the consumer stops early", async () => {
    const reader = await openWacz(`${server.url}large.wacz`);
    try {
      let n = 0;
      for await (const line of iterWaczCdxj(reader)) {
        expect(line).not.toBe("");
        if (++n === 10) break;
      }
      expect(n).toBe(10);
      // The reader is still usable afterwards.
      expect((await reader.readEntry("datapackage-digest.json")).length).toBeGreaterThan(0);
    } finally {
      await reader.close();
    }
  });
});

// ---------------------------------------------------------------- errors

describe("errors", () => {
  let dir: string;
  let server: RangeServer;
  let noRangeServer: RangeServer;
  const lines = syntheticLines(700);

  beforeAll(async () => {
    dir = await tempDir();
    await writeFile(join(dir, "notzip.wacz"), "this is not a zip file\n".repeat(200));

    const warc = join(dir, "e.warc.gz");
    await writeWarc(warc, 3);
    await writeWacz({ outputPath: join(dir, "ok.wacz"), warcFiles: [warc], software: "wacz-reader-test" });

    const warcBytes = await readFile(warc);
    await writeYazlZip(join(dir, "noindex.wacz"), [
      { name: "archive/e.warc.gz", data: warcBytes },
      { name: "pages/pages.jsonl", data: '{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}\n' },
      { name: "datapackage.json", data: minimalDatapackage },
    ]);

    const good = zipNum(lines, 256, false);
    await writeYazlZip(join(dir, "idxonly.wacz"), [
      { name: "indexes/index.idx", data: good.idx(good.blocks) },
      { name: "datapackage.json", data: minimalDatapackage },
    ]);

    // Block 2 of 3 has garbage in the middle of its deflate data (the idx carries no digest,
    // so gunzip itself must notice).
    const corruptBlocks = good.blocks.map((b) => Buffer.from(b));
    const b2 = corruptBlocks[1]!;
    for (let i = Math.floor(b2.length / 3); i < Math.floor(b2.length / 3) + 40; i++) b2[i] = b2[i]! ^ 0x5a;
    await writeYazlZip(join(dir, "corrupt.wacz"), [
      { name: "indexes/index.cdx.gz", data: Buffer.concat(corruptBlocks) },
      { name: "indexes/index.idx", data: good.idx(good.blocks) },
      { name: "datapackage.json", data: minimalDatapackage },
    ]);

    // Same corruption, but the idx carries digests.
    const withDigest = zipNum(lines, 256, true);
    await writeYazlZip(join(dir, "corrupt-digest.wacz"), [
      { name: "indexes/index.cdx.gz", data: Buffer.concat(corruptBlocks) },
      { name: "indexes/index.idx", data: withDigest.idx(withDigest.blocks) },
      { name: "datapackage.json", data: minimalDatapackage },
    ]);

    // The cdx.gz stops in the middle of block 3.
    const truncatedGz = good.gz.subarray(0, good.gz.length - Math.floor(good.blocks[2]!.length / 2));
    await writeYazlZip(join(dir, "truncated.wacz"), [
      { name: "indexes/index.cdx.gz", data: truncatedGz },
      { name: "indexes/index.idx", data: good.idx(good.blocks) },
      { name: "datapackage.json", data: minimalDatapackage },
    ]);

    const badLines = [...lines.slice(0, 2), "com,example)/broken 20240501100000 {not json", ...lines.slice(2, 5)];
    await writeYazlZip(join(dir, "badline.wacz"), [
      { name: "indexes/index.cdxj", data: badLines.join("\n") + "\n" },
      { name: "datapackage.json", data: minimalDatapackage },
    ]);

    // Deflated entries: readable, with a warning.
    await writeYazlZip(join(dir, "deflated.wacz"), [
      { name: "indexes/index.cdxj", data: lines.join("\n") + "\n", compress: true },
      { name: "datapackage.json", data: minimalDatapackage, compress: true },
    ]);

    // A WACZ cut off before its central directory.
    const ok = await readFile(join(dir, "ok.wacz"));
    await writeFile(join(dir, "cut.wacz"), ok.subarray(0, Math.floor(ok.length / 2)));

    server = await startRangeServer(dir);
    noRangeServer = await startRangeServer(dir, { ranges: false });
  });
  afterAll(async () => {
    await server?.close();
    await noRangeServer?.close();
  });

  it("a non-zip file", async () => {
    const path = join(dir, "notzip.wacz");
    await expect(openWacz(path)).rejects.toThrow(WaczReadError);
    await expect(openWacz(path)).rejects.toThrow(`${path}: not a zip file (`);
    const url = `${server.url}notzip.wacz`;
    await expect(openWacz(url)).rejects.toThrow(`${url}: not a zip file (`);
    await expect(openWacz(join(dir, "cut.wacz"))).rejects.toThrow(/: not a zip file \(.*truncated/);
  });

  it("a missing file and a 404 URL", async () => {
    await expect(openWacz(join(dir, "missing.wacz"))).rejects.toThrow(/missing\.wacz: file not found$/);
    const url = `${server.url}missing.wacz`;
    await expect(openWacz(url)).rejects.toThrow(WaczReadError);
    await expect(openWacz(url)).rejects.toThrow(`HTTP 404 for ${url}`);
    await expect(openWacz("ftp://example.com/x.wacz")).rejects.toThrow(/unsupported URL scheme/);
  });

  it("a server without range support", async () => {
    const url = `${noRangeServer.url}ok.wacz`;
    await expect(openWacz(url)).rejects.toThrow(WaczReadError);
    await expect(openWacz(url)).rejects.toThrow(`${url}: server does not support range requests`);
  });

  it("a WACZ without indexes", async () => {
    await withReader(join(dir, "noindex.wacz"), async (reader) => {
      expect(reader.hasEntry("datapackage.json")).toBe(true);
      const err = await collect(reader).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WaczIndexError);
      expect((err as Error).message).toBe(`${join(dir, "noindex.wacz")}: has no CDXJ index (no indexes/ entry)`);
    });
  });

  it("a ZipNum idx without its cdx.gz", async () => {
    await withReader(`${server.url}idxonly.wacz`, async (reader) => {
      await expect(collect(reader)).rejects.toThrow(WaczIndexError);
      await expect(collect(reader)).rejects.toThrow(/idxonly\.wacz: ZipNum index indexes\/index\.idx names index\.cdx\.gz, but the WACZ has no indexes\/index\.cdx\.gz/);
    });
  });

  it("a corrupt block in index.cdx.gz, after the good blocks' lines", async () => {
    for (const name of ["corrupt.wacz", "corrupt-digest.wacz"]) {
      await withReader(`${server.url}${name}`, async (reader) => {
        const got: string[] = [];
        let err: unknown;
        try {
          for await (const line of iterWaczCdxj(reader)) got.push(line);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(WaczIndexError);
        expect((err as Error).message).toMatch(new RegExp(`${name.replace(".", "\\.")}: index\\.cdx\\.gz is truncated or corrupt at block 2 \\(`));
        if (name === "corrupt-digest.wacz") expect((err as Error).message).toMatch(/digest mismatch/);
        expect(got).toEqual(lines.slice(0, 256));
      });
    }
  });

  it("a truncated index.cdx.gz", async () => {
    await withReader(join(dir, "truncated.wacz"), async (reader) => {
      const err = await collect(reader).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WaczIndexError);
      expect((err as Error).message).toMatch(/truncated\.wacz: index\.cdx\.gz is truncated or corrupt at block 3 \(.*ends/);
    });
  });

  it("a malformed CDXJ line, with its line number", async () => {
    await withReader(join(dir, "badline.wacz"), async (reader) => {
      const err = await collect(reader).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WaczIndexError);
      expect((err as Error).message).toMatch(/badline\.wacz: malformed CDXJ line 3 in indexes\/index\.cdxj \(bad JSON: .*\): "com,example\)\/broken 20240501100000 \{not json"$/);
    });
  });

  it("deflated entries are read, with a warning", async () => {
    await withReader(`${server.url}deflated.wacz`, async (reader) => {
      expect(reader.warnings.join("\n")).toMatch(/indexes\/index\.cdxj is deflated; WACZ entries should be stored/);
      expect(await collect(reader)).toEqual(lines);
      const stream = await reader.openEntryStream("indexes/index.cdxj", { start: lines[0]!.length + 1, end: lines[0]!.length + 1 + lines[1]!.length });
      const chunks: Buffer[] = [];
      for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
      expect(Buffer.concat(chunks).toString("utf8")).toBe(lines[1]);
    });
  });
});
