import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WARCRecord, WARCSerializer } from "warcio";
import yazl from "yazl";

import { unresolvedRevisits } from "../../../src/replay/revisitCheck.js";
import type { UnresolvedRevisit } from "../../../src/replay/waczSet.js";
import { indexWarcFiles, writeWacz } from "../../../src/wacz/index.js";
import { WaczReadError } from "../../../src/wacz/reader/index.js";
import { readZip } from "../../helpers/zip.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "revisit-check-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const enc = new TextEncoder();

function response(url: string, date: string, status = 200, body: Uint8Array = enc.encode(`<p>${url}</p>`)): WARCRecord {
  const reason = status === 200 ? "OK" : "Moved Permanently";
  const httpHeaders: Record<string, string> = status === 200 ? { "Content-Type": "text/html" } : { Location: "https://example.com/new" };
  return WARCRecord.create({ url, date, type: "response", warcVersion: "WARC/1.1", statusline: `HTTP/1.1 ${status} ${reason}`, httpHeaders }, [body]);
}

/** A revisit; without refersToUrl, one that names no record (as the WARC standard allows). */
function revisit(url: string, date: string, refersToUrl?: string, refersToDate?: string): WARCRecord {
  return WARCRecord.create(
    { url, date, type: "revisit", warcVersion: "WARC/1.1", statusline: "HTTP/1.1 200 OK", httpHeaders: { "Content-Type": "text/html" }, refersToUrl, refersToDate },
    [],
  );
}

function resource(url: string, date: string): WARCRecord {
  return WARCRecord.create({ url, date, type: "resource", warcVersion: "WARC/1.1", warcHeaders: { "Content-Type": "text/plain" } }, [enc.encode("the page's text")]);
}

/** A .warc.gz of the records, each its own gzip member (as the crawler writes them). */
async function writeWarc(path: string, records: WARCRecord[]): Promise<void> {
  const members: Uint8Array[] = [];
  for (const record of records) members.push(gzipSync(await WARCSerializer.serialize(record)));
  await writeFile(path, Buffer.concat(members));
}

/** A WACZ named `<name>.wacz` holding one WARC of the records; a member of a set, as the check takes one. */
async function waczOf(name: string, records: WARCRecord[], zipNumThresholdBytes?: number): Promise<{ name: string; path: string }> {
  const warc = join(dir, `${name}.warc.gz`);
  await writeWarc(warc, records);
  const path = join(dir, `${name}.wacz`);
  await writeWacz({ outputPath: path, warcFiles: [warc], software: "revisit-check-test", ...(zipNumThresholdBytes !== undefined && { zipNumThresholdBytes }) });
  return { name: `${name}.wacz`, path };
}

function unresolved(wacz: string, url: string, date: string, refersToUrl: string, refersToDate: string): UnresolvedRevisit {
  return { wacz, url, date, refersToUrl, refersToDate };
}

const PAGE = "https://example.com/page";
const PAGE_DATE = "2024-05-01T10:00:00.250Z";
/** The revisit in first.wacz: a record at PAGE, but no response. */
const PAGE_REVISIT_DATE = "2024-05-02T10:00:00.100Z";

/** first.wacz: responses (one a redirect, one large), a resource, and revisits into itself and into nothing. */
function firstRecords(): WARCRecord[] {
  return [
    response(PAGE, PAGE_DATE),
    response("https://example.com/old", "2024-05-01T10:00:05Z", 301),
    resource(`urn:text:${PAGE}`, "2024-05-01T10:00:06.000Z"),
    revisit(PAGE, PAGE_REVISIT_DATE, PAGE, PAGE_DATE),
    // Wider than the gap the check reads across: the revisits on either side are read apart.
    response("https://example.com/big.bin", "2024-05-01T10:00:07.000Z", 200, randomBytes(100 * 1024)),
    revisit("https://example.com/gone", "2024-05-02T10:00:01.000Z", "https://example.com/gone", "2024-04-01T00:00:00.000Z"),
  ];
}

/** second.wacz: revisits only, of first.wacz's records. */
function secondRecords(): WARCRecord[] {
  return [
    // Another member's response, named at another fraction of the same second.
    revisit(PAGE, "2024-05-03T10:00:00.100Z", PAGE, "2024-05-01T10:00:00.999Z"),
    // A redirect is a response all the same; the date without fraction, as WARC/1.0 wrote them.
    revisit("https://example.com/old", "2024-05-03T10:00:05.000Z", "https://example.com/old", "2024-05-01T10:00:05Z"),
    // first.wacz's revisit: a chain, which replay does not follow.
    revisit("https://example.com/page-copy", "2024-05-03T10:00:02.000Z", PAGE, PAGE_REVISIT_DATE),
    // The response's URL and date, a second later.
    revisit("https://example.com/late", "2024-05-03T10:00:03.000Z", PAGE, "2024-05-01T10:00:01.250Z"),
    // A resource record is no response.
    revisit("https://example.com/text", "2024-05-03T10:00:04.000Z", `urn:text:${PAGE}`, "2024-05-01T10:00:06.000Z"),
    // URLs match exactly: not as the index's keys (SURT) compare them, where /Page is /page.
    revisit("https://example.com/case", "2024-05-03T10:00:06.000Z", "https://example.com/Page", PAGE_DATE),
    revisit("https://example.com/bare", "2024-05-03T10:00:07.000Z"),
  ];
}

/** What second.wacz holds that resolves to no response even with first.wacz, in its index's order. */
const secondUnresolved = [
  unresolved("second.wacz", "https://example.com/bare", "2024-05-03T10:00:07.000Z", "", ""),
  unresolved("second.wacz", "https://example.com/case", "2024-05-03T10:00:06.000Z", "https://example.com/Page", PAGE_DATE),
  unresolved("second.wacz", "https://example.com/late", "2024-05-03T10:00:03.000Z", PAGE, "2024-05-01T10:00:01.250Z"),
  unresolved("second.wacz", "https://example.com/page-copy", "2024-05-03T10:00:02.000Z", PAGE, PAGE_REVISIT_DATE),
  unresolved("second.wacz", "https://example.com/text", "2024-05-03T10:00:04.000Z", `urn:text:${PAGE}`, "2024-05-01T10:00:06.000Z"),
];
const firstUnresolved = [unresolved("first.wacz", "https://example.com/gone", "2024-05-02T10:00:01.000Z", "https://example.com/gone", "2024-04-01T00:00:00.000Z")];

describe("unresolvedRevisits", () => {
  let first: { name: string; path: string };
  let second: { name: string; path: string };

  beforeAll(async () => {
    first = await waczOf("first", firstRecords());
    second = await waczOf("second", secondRecords());
  });

  it("names the revisits whose target is missing, a revisit, at another second, no response or not named; the others resolve within a WACZ and across members", async () => {
    expect(await unresolvedRevisits([first, second])).toEqual([...firstUnresolved, ...secondUnresolved]);
  });

  it("finds a target in a member listed after the revisit's", async () => {
    expect(await unresolvedRevisits([second, first])).toEqual([...secondUnresolved, ...firstUnresolved]);
  });

  it("without the member its targets are in, names every revisit of a WACZ in its index's order", async () => {
    expect(await unresolvedRevisits([second])).toEqual([
      ...secondUnresolved.slice(0, 3),
      unresolved("second.wacz", "https://example.com/old", "2024-05-03T10:00:05.000Z", "https://example.com/old", "2024-05-01T10:00:05Z"),
      unresolved("second.wacz", PAGE, "2024-05-03T10:00:00.100Z", PAGE, "2024-05-01T10:00:00.999Z"),
      ...secondUnresolved.slice(3),
    ]);
  });

  it("reads ZipNum indexes as plain ones", async () => {
    const zipNumFirst = await waczOf("zipnum-first", firstRecords(), 1);
    const zipNumSecond = await waczOf("zipnum-second", secondRecords(), 1);
    const entries = [...(await readZip(zipNumSecond.path)).keys()].filter((name) => name.startsWith("indexes/"));
    expect(entries).toEqual(["indexes/index.cdx.gz", "indexes/index.idx"]);
    const named = (list: UnresolvedRevisit[], wacz: string) => list.map((r) => ({ ...r, wacz }));
    expect(await unresolvedRevisits([zipNumFirst, zipNumSecond])).toEqual([...named(firstUnresolved, "zipnum-first.wacz"), ...named(secondUnresolved, "zipnum-second.wacz")]);
  });

  it("checks a WACZ of more revisits than are read at once, naming the unresolved in index order", async () => {
    const target = "https://example.com/original";
    const records = [response(target, "2024-06-01T00:00:00.000Z")];
    const expected: UnresolvedRevisit[] = [];
    for (let i = 0; i < 1100; i++) {
      const url = `https://example.com/copy/${String(i).padStart(4, "0")}`;
      const date = new Date(Date.UTC(2024, 5, 2) + i * 1000).toISOString();
      // Every 100th names the original a day late.
      const refersToDate = i % 100 === 0 ? "2024-06-02T00:00:00.000Z" : "2024-06-01T00:00:00.500Z";
      records.push(revisit(url, date, target, refersToDate));
      if (i % 100 === 0) expected.push(unresolved("many.wacz", url, date, target, refersToDate));
    }
    const many = await waczOf("many", records);
    const found = await unresolvedRevisits([many]);
    expect(found.length).toBe(11);
    expect(found).toEqual(expected);
  });

  it("fails, naming the WACZ, file and offset, when the index lists a revisit where the WARC holds another record", async () => {
    const warc = join(dir, "mislisted.warc.gz");
    await writeWarc(warc, [response(PAGE, PAGE_DATE), revisit(PAGE, PAGE_REVISIT_DATE, PAGE, PAGE_DATE)]);
    const lines = await indexWarcFiles([warc]);
    expect(lines.length).toBe(2);
    // The revisit's line, pointed at the response (offset 0).
    const wrongLine = lines[1]!.replace(/"offset":"\d+"/, '"offset":"0"');
    const path = join(dir, "mislisted.wacz");
    const zip = new yazl.ZipFile();
    zip.addFile(warc, "archive/mislisted.warc.gz", { compress: false });
    zip.addBuffer(Buffer.from([lines[0], wrongLine].join("\n") + "\n"), "indexes/index.cdxj", { compress: false });
    zip.addBuffer(Buffer.from(JSON.stringify({ profile: "data-package", wacz_version: "1.1.1", resources: [] })), "datapackage.json", { compress: false });
    zip.end();
    await new Promise<void>((resolve, reject) => {
      zip.outputStream.pipe(createWriteStream(path)).on("close", resolve).on("error", reject);
    });

    const check = unresolvedRevisits([{ name: "mislisted.wacz", path }]);
    await expect(check).rejects.toThrow(WaczReadError);
    await expect(check).rejects.toThrow(`${path}: archive/mislisted.warc.gz at offset 0: the index lists a revisit, the record is response`);
  });
});
