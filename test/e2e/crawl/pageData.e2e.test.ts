/**
 * --text and --screenshot: each page's text in pages.jsonl and as a urn:text: record, and its
 * screenshots as urn:view:/urn:thumbnail:/urn:fullPage: records, which are not HTTP captures (never in
 * the dedupe index, the capture history or totalUrls) but are in the WACZ's CDXJ for replay.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords, sha256, type RawRecord } from "../../helpers/warcFile.js";
import { readZip, type ZipEntryData } from "../../helpers/zip.js";
import { searchReplayPages } from "../../helpers/replaySearch.js";
import { startReplayServer } from "../../helpers/replay.js";

const PAGES = ["/pagedata/index.html", "/pagedata/long.html", "/pagedata/words.html"];
/** What browsertrix-crawler's extraction makes of index.html: no header, footer, script, style, noscript or title. */
const INDEX_TEXT = ["Page data fixture", "Archived pages keep their", "words", ".", "A long page", "Rare words", "Added by script"].join("\n");
const WORDS_TEXT = ["Rare words", "The archive remembers the quetzalcoatlus.", "Home"].join("\n");
const KINDS = { text: "text/plain; charset=utf-8", view: "image/png", thumbnail: "image/jpeg", fullPage: "image/png" } as const;

let site: FixtureServer;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
let wacz: Map<string, ZipEntryData>;

const typeOf = (r: RawRecord) => r.headers.get("warc-type");
const uriOf = (r: RawRecord) => r.headers.get("warc-target-uri")!;
const collectionDir = (name: string) => join(cwd, "collections", name);
const recordsOf = (name: string) => readdirSync(join(collectionDir(name), "archive")).flatMap((f) => readWarcRecords(join(collectionDir(name), "archive", f)));

function jsonLines(data: Buffer | string): Record<string, unknown>[] {
  return data.toString().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Width and height from a PNG's IHDR or a JPEG's SOF marker; throws on anything else. */
function imageSize(bytes: Buffer): { format: "png" | "jpeg"; width: number; height: number } {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    expect(bytes.subarray(12, 16).toString("latin1")).toBe("IHDR");
    expect(bytes.subarray(-8, -4).toString("latin1")).toBe("IEND");
    return { format: "png", width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  if (bytes[0] === 0xff && bytes[1] === 0xd8) {
    expect(bytes.subarray(-2)).toEqual(Buffer.from([0xff, 0xd9]));
    for (let i = 2; i < bytes.length; ) {
      if (bytes[i] !== 0xff) throw new Error(`bad JPEG marker at ${i}`);
      const marker = bytes[i + 1];
      if (marker >= 0xc0 && marker <= 0xc3) return { format: "jpeg", height: bytes.readUInt16BE(i + 5), width: bytes.readUInt16BE(i + 7) };
      i += 2 + bytes.readUInt16BE(i + 2);
    }
    throw new Error("JPEG without a frame header");
  }
  throw new Error(`not a PNG or JPEG: ${bytes.subarray(0, 8).toString("hex")}`);
}

beforeAll(async () => {
  site = await startFixtureServer();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-pagedata-"));
  crawl = await runCli("crawl", [
    "--url", site.url + PAGES[0], "--collection", "pd", "--cwd", cwd, "--generateWACZ",
    "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--workers", "2",
    "--text", "to-pages,to-warc", "--screenshot", "view,thumbnail", "--screenshot", "fullPage",
    "--statsFilename", join(cwd, "pd.json"),
  ]);
  records = recordsOf("pd");
  wacz = await readZip(join(collectionDir("pd"), "pd.wacz"));
}, 240_000);

afterAll(async () => {
  await site?.close();
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("--text to-pages,to-warc --screenshot view,thumbnail,fullPage", () => {
  it("crawls every page", () => {
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, "pd.json"), "utf8"))).toMatchObject({ crawled: 3, failed: 0, status: "done", committed: true });
  });

  it("writes each page's text into pages.jsonl (header hasText), exactly as extracted", () => {
    const [header, ...seeds] = jsonLines(wacz.get("pages/pages.jsonl")!.data);
    expect(header).toEqual({ format: "json-pages-1.0", id: "pages", title: "All Pages", hasText: true });
    expect(seeds).toHaveLength(1);
    expect(seeds[0]).toMatchObject({ url: site.url + PAGES[0], title: "Page Data Home", text: INDEX_TEXT });
    const [extraHeader, ...extra] = jsonLines(wacz.get("pages/extraPages.jsonl")!.data);
    expect(extraHeader).toEqual({ format: "json-pages-1.0", id: "extra-pages", title: "Extra Pages", hasText: true });
    const byUrl = new Map(extra.map((p) => [p["url"], p]));
    expect([...byUrl.keys()].sort()).toEqual([site.url + PAGES[1], site.url + PAGES[2]]);
    expect(byUrl.get(site.url + PAGES[2])!["text"]).toBe(WORDS_TEXT);
    expect(byUrl.get(site.url + PAGES[1])!["text"]).toBe("Top of the long page\nThree thousand pixels of page\nBottom of the long page\nHome");
  });

  it("writes exactly one urn:text:, urn:view:, urn:thumbnail: and urn:fullPage: resource record per page", () => {
    const resources = records.filter((r) => typeOf(r) === "resource");
    const expected = PAGES.flatMap((p) => Object.keys(KINDS).map((kind) => `urn:${kind}:${site.url}${p}`));
    expect(resources.map(uriOf).sort()).toEqual(expected.sort());
    for (const record of resources) {
      const kind = /^urn:(\w+):/.exec(uriOf(record))![1] as keyof typeof KINDS;
      expect(record.headers.get("content-type")).toBe(KINDS[kind]);
      expect(record.headers.get("warc-payload-digest")).toBe(sha256(record.block));
      expect(record.headers.get("warc-block-digest")).toBe(sha256(record.block));
    }
    // Dated like the page, so a replay finds them at the page's timestamp.
    for (const page of PAGES) {
      const ts = jsonLines(readFileSync(join(collectionDir("pd"), "pages", page.endsWith("index.html") ? "pages.jsonl" : "extraPages.jsonl"))).find((p) => p["url"] === site.url + page)!["ts"];
      for (const kind of Object.keys(KINDS)) {
        expect(resources.find((r) => uriOf(r) === `urn:${kind}:${site.url}${page}`)!.headers.get("warc-date")).toBe(ts);
      }
    }
  });

  it("stores the text record as the pages.jsonl text", () => {
    const text = (page: string) => records.find((r) => uriOf(r) === `urn:text:${site.url}${page}`)!.block.toString("utf8");
    expect(text(PAGES[0])).toBe(INDEX_TEXT);
    expect(text(PAGES[2])).toBe(WORDS_TEXT);
  });

  it("stores valid images: view is the 1366x900 viewport, the thumbnail a 640 px JPEG, fullPage the whole long page", () => {
    const image = (kind: string, page: string) => imageSize(records.find((r) => uriOf(r) === `urn:${kind}:${site.url}${page}`)!.block);
    for (const page of PAGES) {
      expect(image("view", page)).toEqual({ format: "png", width: 1366, height: 900 });
      const thumb = image("thumbnail", page);
      expect(thumb.format).toBe("jpeg");
      expect(thumb.width).toBe(640);
      expect(Math.abs(thumb.height - 360)).toBeLessThanOrEqual(1);
    }
    const full = image("fullPage", PAGES[1]);
    expect(full.format).toBe("png");
    expect(full.width).toBe(1366);
    expect(full.height).toBeGreaterThan(3000);
    // A page shorter than the viewport: its full page is the viewport.
    expect(image("fullPage", PAGES[2])).toEqual({ format: "png", width: 1366, height: 900 });
  });

  it("indexes the resource records in the WACZ's CDXJ, by their urn: URL", () => {
    const lines = wacz.get("indexes/index.cdxj")!.data.toString().split("\n").filter(Boolean);
    const entries = lines.map((l) => JSON.parse(l.slice(l.indexOf("{"))) as { url: string; mime: string; offset: string; length: string; filename: string });
    for (const record of records.filter((r) => typeOf(r) === "resource")) {
      const entry = entries.filter((e) => e.url === uriOf(record));
      expect(entry).toHaveLength(1);
      expect(entry[0].mime).toBe(record.headers.get("content-type"));
      expect(Number(entry[0].offset)).toBe(record.offset);
      expect(Number(entry[0].length)).toBe(record.length);
    }
  });

  it("keeps them out of the dedupe index, the capture history and totalUrls", async () => {
    const resources = records.filter((r) => typeOf(r) === "resource");
    const captures = records.filter((r) => typeOf(r) === "response" || typeOf(r) === "revisit");
    const hashes = await redis.client.hgetall("h:pd");
    for (const record of resources) expect(hashes[record.headers.get("warc-payload-digest")!]).toBeUndefined();
    for (const value of Object.values(hashes)) expect(value).not.toContain(" urn:");
    expect(Object.keys(await redis.client.hgetall("u:pd")).filter((url) => url.startsWith("urn:"))).toEqual([]);
    expect((await redis.client.hgetall("h:pd:counts"))["totalUrls"]).toBe(String(captures.length));
    expect(Number((await redis.client.hgetall("allcounts"))["totalUrls"])).toBe(captures.length);
  });

  it("ReplayWeb.page's full-text search finds a page by a word only in its text", async () => {
    const replay = await startReplayServer(collectionDir("pd"));
    try {
      const found = await searchReplayPages(replay, { source: "/archives/pd.wacz", query: "quetzalcoatlus" });
      expect(found.map((p) => p.url)).toEqual([site.url + PAGES[2]]);
      // The page list shows the page's thumbnail, replayed from its urn:thumbnail: record.
      expect(found[0].thumbnail).toMatchObject({ width: 640 });
      expect(found[0].thumbnail!.src).toContain(`urn:thumbnail:${site.url}${PAGES[2]}`);
      expect(await searchReplayPages(replay, { source: "/archives/pd.wacz", query: "nonexistentword" })).toEqual([]);
    } finally {
      await replay.close();
    }
  }, 180_000);
});

describe("--text alone", () => {
  it("means to-pages: text in pages.jsonl, no resource records", async () => {
    const result = await runCli("crawl", [
      "--url", site.url + PAGES[2], "--depth", "0", "--collection", "textonly", "--cwd", cwd,
      "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--text",
    ]);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const [header, page] = jsonLines(readFileSync(join(collectionDir("textonly"), "pages", "pages.jsonl")));
    expect(header["hasText"]).toBe(true);
    expect(page["text"]).toBe(WORDS_TEXT);
    expect(recordsOf("textonly").filter((r) => typeOf(r) === "resource")).toEqual([]);
  }, 120_000);

  it("without --text or --screenshot, pages carry no text and no resource record is written", async () => {
    const result = await runCli("crawl", [
      "--url", site.url + PAGES[2], "--depth", "0", "--collection", "plain", "--cwd", cwd,
      "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url,
    ]);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const [header, page] = jsonLines(readFileSync(join(collectionDir("plain"), "pages", "pages.jsonl")));
    expect(header).toEqual({ format: "json-pages-1.0", id: "pages", title: "All Pages" });
    expect(page).not.toHaveProperty("text");
    expect(recordsOf("plain").filter((r) => typeOf(r) === "resource")).toEqual([]);
  }, 120_000);

  it("refuses unknown --text and --screenshot values with a one-line error", async () => {
    for (const [flag, value] of [["--text", "to-nowhere"], ["--screenshot", "view,huge"]]) {
      const result = await runCli("crawl", ["--url", site.url + PAGES[2], "--cwd", cwd, flag, value]);
      expect(result.code).toBe(4);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toContain(`${flag} takes a comma-separated list of`);
    }
  });
});
