// Importing WACZ files laid out the way browsertrix-crawler 1.x writes them: next to the HTTP
// request/response/revisit records, `resource` records for each page (urn:pageinfo: JSON, urn:text:
// extracted text, urn:view: and urn:thumbnail: screenshots). Their CDXJ lines carry the WARC
// Content-Type as mime and the payload digest, and no status (warcio.js) or "200" (pywb's Python
// indexer). Only the 26 HTTP captures may be counted, and only 2xx non-empty responses indexed.
import { createHash, randomBytes } from "node:crypto";
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WARCRecord, WARCSerializer } from "warcio";
import yazl from "yazl";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { Deduplicator } from "../../../src/dedupe/deduplicator.js";
import { indexWarcFiles, parseCdxjLine as parseCdxjRecord, writeCdxIndexes, writeWacz } from "../../../src/wacz/index.js";
import { runCli } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readZip } from "../../helpers/zip.js";

let redis: TestRedis;
let dir: string;

const digestOf = (body: Uint8Array) => "sha256:" + createHash("sha256").update(body).digest("hex");
const enc = new TextEncoder();

interface Written {
  /** Payload digests that must be in h:<crawlId>: 2xx, not 206, non-empty responses. */
  indexable: Map<string, string>;
  responses: number;
  revisits: number;
  resources: number;
}

async function append(path: string, record: WARCRecord): Promise<void> {
  await appendFile(path, await WARCSerializer.serialize(record, { gzip: true }));
}

/** 20 responses (with requests), 6 revisits, 21 resource records of 6 pages. */
async function writeBrowsertrixStyleWarc(path: string): Promise<Written> {
  const written: Written = { indexable: new Map(), responses: 0, revisits: 0, resources: 0 };
  const bodies: Uint8Array[] = [];
  const at = (s: number) => new Date(Date.UTC(2025, 2, 1, 12, 0, s)).toISOString();
  for (let i = 0; i < 20; i++) {
    const url = `https://site.example/p/${i}`;
    const status = i === 16 ? 404 : i === 17 ? 301 : 200;
    const body = i === 18 ? new Uint8Array() : enc.encode(`<html><body>page ${i} ${randomBytes(1500).toString("base64")}</body></html>`);
    bodies.push(body);
    await append(path, WARCRecord.create({ url, date: at(i), type: "request", warcVersion: "WARC/1.1", statusline: `GET /p/${i} HTTP/1.1`, httpHeaders: { Host: "site.example" } }));
    await append(path, WARCRecord.create(
      { url, date: at(i), type: "response", warcVersion: "WARC/1.1", statusline: `HTTP/1.1 ${status} X`, httpHeaders: { "Content-Type": "text/html", "Content-Length": String(body.length) } },
      [body],
    ));
    written.responses += 1;
    if (status === 200 && body.length) written.indexable.set(digestOf(body), url);
  }
  for (let j = 0; j < 6; j++) {
    const url = `https://site.example/copy/${j}`;
    await append(path, WARCRecord.create({
      url, date: at(30 + j), type: "revisit", warcVersion: "WARC/1.1", statusline: "HTTP/1.1 200 OK",
      httpHeaders: { "Content-Type": "text/html" }, refersToUrl: `https://site.example/p/${j}`, refersToDate: at(j),
      warcHeaders: { "WARC-Payload-Digest": digestOf(bodies[j]!) },
    }));
    written.revisits += 1;
  }
  const resource = async (kind: string, page: number, contentType: string, body: Uint8Array) => {
    await append(path, WARCRecord.create(
      { url: `urn:${kind}:https://site.example/p/${page}`, date: at(40 + page), type: "resource", warcVersion: "WARC/1.1", warcHeaders: { "Content-Type": contentType } },
      [body],
    ));
    written.resources += 1;
  };
  for (let page = 0; page < 6; page++) {
    await resource("pageinfo", page, "application/json", enc.encode(JSON.stringify({ pageid: `p${page}`, url: `https://site.example/p/${page}`, urls: {} })));
    await resource("text", page, "text/plain", enc.encode(`page ${page} text`));
    await resource("view", page, "image/png", enc.encode(`\x89PNG fake screenshot ${page}`));
    if (page < 3) await resource("thumbnail", page, "image/jpeg", enc.encode(`\xff\xd8 fake thumbnail ${page}`));
  }
  return written;
}

function zipTo(path: string, entries: { name: string; data?: Buffer; file?: string }[]): Promise<void> {
  const z = new yazl.ZipFile();
  for (const e of entries) {
    if (e.file) z.addFile(e.file, e.name, { compress: false });
    else z.addBuffer(e.data!, e.name, { compress: false });
  }
  z.end();
  return new Promise((resolve) => z.outputStream.pipe(createWriteStream(path)).on("close", () => resolve()));
}

let written: Written;
const wacz = (name: string) => join(dir, `${name}.wacz`);
const crawls = ["plain", "zipnum", "py-plain", "py-zipnum"] as const;

beforeAll(async () => {
  redis = await startTestRedis();
  dir = await mkdtemp(join(tmpdir(), "indexer-resources-"));
  const warc = join(dir, "rec-20250301.warc.gz");
  written = await writeBrowsertrixStyleWarc(warc);
  // The crawler's own WACZ writer (warcio.js CDX indexer, like browsertrix-crawler's): plain and ZipNum.
  await writeWacz({ outputPath: wacz("plain"), warcFiles: [warc], software: "test", zipNumThresholdBytes: 1e9 });
  await writeWacz({ outputPath: wacz("zipnum"), warcFiles: [warc], software: "test", zipNumThresholdBytes: 0 });
  // pywb's Python indexer gives resource records status "200": same archive, that index, plain and ZipNum (several blocks).
  const lines = (await indexWarcFiles([warc])).map((line) =>
    line.includes('"url":"urn:') ? line.replace(/\}$/, ',"status":"200"}') : line,
  );
  for (const [name, threshold] of [["py-plain", 1e9], ["py-zipnum", 0]] as const) {
    const work = await mkdtemp(join(dir, "idx-"));
    const indexes = await writeCdxIndexes(lines, work, { thresholdBytes: threshold, linesPerBlock: 8 });
    const datapackage = Buffer.from(JSON.stringify({ profile: "data-package", wacz_version: "1.1.1", resources: [] }));
    await zipTo(wacz(name), [
      { name: "archive/rec-20250301.warc.gz", file: warc },
      ...indexes.map((i) => ({ name: i.zipPath, file: i.sourcePath })),
      { name: "pages/pages.jsonl", data: Buffer.from('{"format":"json-pages-1.0","id":"pages"}\n') },
      { name: "datapackage.json", data: datapackage },
    ]);
  }
}, 60_000);

afterAll(async () => {
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("WACZ files with browsertrix-crawler resource records", () => {
  it("the test archives hold what they should (47 index lines, 21 of them urn: resources; plain and ZipNum)", async () => {
    expect(written).toMatchObject({ responses: 20, revisits: 6, resources: 21 });
    expect(written.indexable.size).toBe(17);
    const plain = await readZip(wacz("plain"));
    const lines = plain.get("indexes/index.cdxj")!.data.toString("utf8").trim().split("\n").map(parseCdxjRecord);
    expect(lines).toHaveLength(47);
    const urn = lines.filter((l) => l.url.startsWith("urn:"));
    expect(urn).toHaveLength(21);
    expect(new Set(urn.map((l) => l.url.split(":")[1]))).toEqual(new Set(["pageinfo", "text", "view", "thumbnail"]));
    expect(urn.every((l) => l.status === undefined && typeof l.digest === "string" && l.mime !== "warc/revisit")).toBe(true);
    expect(urn.find((l) => l.url.startsWith("urn:pageinfo:"))!.mime).toBe("application/json");
    expect([...(await readZip(wacz("zipnum"))).keys()]).toEqual(expect.arrayContaining(["indexes/index.idx", "indexes/index.cdx.gz"]));
    const pyIdx = (await readZip(wacz("py-zipnum"))).get("indexes/index.idx")!.data.toString("utf8").trim().split("\n");
    expect(pyIdx.length).toBe(1 + Math.ceil(47 / 8));
  });

  it("imports count only the 26 HTTP captures and index only the 2xx non-empty responses' payloads", async () => {
    const resources = await Promise.all(crawls.map(async (crawlId) => {
      const bytes = await readFile(wacz(crawlId));
      return { name: `${crawlId}.wacz`, path: `${crawlId}.wacz`, crawlId, size: bytes.length, hash: digestOf(bytes) };
    }));
    await writeFile(join(dir, "all.json"), JSON.stringify({ profile: "multi-wacz-package", resources }));
    const result = await runCli("indexer", ["--redisDedupeUrl", redis.url, "--sourceUrl", join(dir, "all.json")]);
    expect(result.code, result.stderr.slice(-1500)).toBe(0);

    // What each revisit conserves: the original response record's length minus its own (from the index).
    const lines = (await readZip(wacz("plain"))).get("indexes/index.cdxj")!.data.toString("utf8").trim().split("\n").map(parseCdxjRecord);
    const originalLength = new Map(lines.filter((l) => l.url.includes("/p/")).map((l) => [l.digest, Number(l.length)]));
    const conserved = lines.filter((l) => l.mime === "warc/revisit").reduce((sum, l) => sum + originalLength.get(l.digest)! - Number(l.length), 0);
    expect(conserved).toBeGreaterThan(0);

    for (const crawlId of crawls) {
      expect(await redis.client.hgetall(`h:${crawlId}:counts`), crawlId).toEqual({
        totalUrls: "26", dupeUrls: "6", conservedSize: String(conserved), totalCrawlSize: String((await stat(wacz(crawlId))).size),
      });
      const hashes = await redis.client.hgetall(`h:${crawlId}`);
      expect(new Set(Object.keys(hashes)), crawlId).toEqual(new Set(written.indexable.keys()));
      for (const [digest, url] of written.indexable) expect(hashes[digest], crawlId).toMatch(new RegExp(`^0 2025030112\\d{4} ${url} \\d+$`));
    }
    const all = await redis.client.hgetall("allcounts");
    expect(all.totalUrls).toBe(String(26 * crawls.length));
    // The first crawl to index a payload keeps it in allhashes (one importer: manifest order).
    expect(await redis.client.hgetall("allhashes")).toEqual(Object.fromEntries([...written.indexable.keys()].map((d) => [d, "plain"])));
  }, 120_000);

  it("the crawler counts live by the same rule: a resource record at a urn: URL adds nothing", async () => {
    const index = new DedupeIndex(redis.client, "live-rule");
    const dedupe = new Deduplicator(index);
    const placement = { date: "2025-03-01T12:00:00Z", length: 100, wacz: { filename: "live-rule.wacz", index: 0 } };
    await dedupe.noteResponse("sha256:aa", { ...placement, warcType: "response", url: "https://site.example/a" }, true);
    await dedupe.noteResponse("sha256:bb", { ...placement, warcType: "resource", url: "urn:pageinfo:https://site.example/a" }, false);
    await dedupe.noteResponse("sha256:cc", { ...placement, warcType: "response", url: "urn:text:https://site.example/a" }, false);
    expect(await index.counts()).toEqual({ totalCrawlSize: 0, totalUrls: 1, dupeUrls: 0, conservedSize: 0 });
  });

  it("URLs with non-ASCII characters, tabs and newlines (JSON escapes) are indexed exactly", async () => {
    const d = (c: string) => c.repeat(64);
    const urls = ["https://example.com/\u00e9t\u00e9/\u{1d11e}", "https://example.com/a\tb", "https://example.com/a\nb", "https://example.com/plain"];
    const lines = urls.map((url, i) =>
      `com,example)/${i} 2025030112000${i} ${JSON.stringify({ url, mime: "text/html", status: "200", digest: d(String(i)), length: String(100 + i), offset: "0", filename: "x.warc.gz" })}`,
    );
    const datapackage = Buffer.from(JSON.stringify({ profile: "data-package", wacz_version: "1.1.1", resources: [] }));
    await zipTo(wacz("odd"), [
      { name: "indexes/index.cdxj", data: Buffer.from(lines.join("\n") + "\n") },
      { name: "datapackage.json", data: datapackage },
    ]);
    const result = await runCli("indexer", ["--redisDedupeUrl", redis.url, "--sourceUrl", wacz("odd")]);
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    expect(await redis.client.hgetall("h:odd")).toEqual(Object.fromEntries(urls.map((url, i) => [`sha256:${d(String(i))}`, `0 2025030112000${i} ${url} ${100 + i}`])));
    expect(await redis.client.hget("h:odd:counts", "totalUrls")).toBe("4");
  }, 60_000);

  it("the same lines as pywb / cdxj-indexer write them (spaces, \\u escapes, fields in another order) are indexed the same", async () => {
    const d = (c: string) => c.repeat(64);
    const urls = ["https://example.com/\u00e9t\u00e9/\u{1d11e}", "https://example.com/a\tb", "https://example.com/a\nb", "https://example.com/plain", 'https://example.com/"q"'];
    // Python's json.dumps: ", " and ": " separators, every non-ASCII code unit as \uXXXX.
    const py = (value: string) => JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
    const lines = urls.map((url, i) => {
      const fields: [string, string][] = [["url", url], ["mime", "text/html"], ["status", "200"], ["digest", d(String(i))], ["length", String(100 + i)], ["offset", "0"], ["filename", "x.warc.gz"]];
      if (i % 2) fields.reverse();
      return `com,example)/${i} 2025030112000${i} {${fields.map(([k, v]) => `${py(k)}: ${py(v)}`).join(", ")}}`;
    });
    const datapackage = Buffer.from(JSON.stringify({ profile: "data-package", wacz_version: "1.1.1", resources: [] }));
    await zipTo(wacz("oddpy"), [
      { name: "indexes/index.cdxj", data: Buffer.from(lines.join("\n") + "\n") },
      { name: "datapackage.json", data: datapackage },
    ]);
    const result = await runCli("indexer", ["--redisDedupeUrl", redis.url, "--sourceUrl", wacz("oddpy")]);
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    expect(await redis.client.hgetall("h:oddpy")).toEqual(Object.fromEntries(urls.map((url, i) => [`sha256:${d(String(i))}`, `0 2025030112000${i} ${url} ${100 + i}`])));
    expect(await redis.client.hget("h:oddpy:counts", "totalUrls")).toBe("5");
  }, 60_000);
});
