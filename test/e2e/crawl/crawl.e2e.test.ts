import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import {
  DUPLICATE_PAYLOAD_PATHS,
  EXPECTED_PAGE_PATHS,
  EXPECTED_RESOURCE_PATHS,
  OFFSCOPE_PATHS,
  SEED_PATH,
  SITE_PAGES,
} from "../../../fixtures/site-manifest.js";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { httpHeader, httpStatus, parseRecord, readWarcRecords, sha256, type RawRecord } from "../../helpers/warcFile.js";
import { readZip, type ZipEntryData } from "../../helpers/zip.js";
import { detectReplayFailure, startReplayServer, type ReplayServer } from "../../helpers/replay.js";
import { openReplaySession, type ReplaySession } from "../../helpers/replaySession.js";

let site: FixtureServer;
let cwd: string;
let crawl: CliResult;
let collectionDir: string;
let records: RawRecord[];
let wacz: Map<string, ZipEntryData>;

const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

beforeAll(async () => {
  site = await startFixtureServer();
  cwd = mkdtempSync(join(tmpdir(), "crawl-e2e-"));
  crawl = await runCli("crawl", [
    "--url", site.url + SEED_PATH,
    "--collection", "e2e",
    "--cwd", cwd,
    "--generateWACZ",
    "--workers", "2",
    "--statsFilename", join(cwd, "stats.json"),
  ]);
  collectionDir = join(cwd, "collections", "e2e");
  const archive = join(collectionDir, "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
  wacz = await readZip(join(collectionDir, "e2e.wacz"));
}, 240_000);

afterAll(async () => {
  await site?.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe("crawl of the fixture site", () => {
  it("finishes with exit code 0 and exact stats", () => {
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    const stats = JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8"));
    expect(stats).toMatchObject({ crawlId: "e2e", crawled: SITE_PAGES.length, failed: 0, failedAttempts: 0, queued: 0, pending: 0, status: "done" });
    // Nothing on this site is cut off: a redirect's body, which the browser never hands over, is not "short".
    expect(stats.truncated.count).toBe(0);
    expect(records.filter((r) => r.headers.has("warc-truncated")).map((r) => r.headers.get("warc-target-uri"))).toEqual([]);
  });

  it("captures exactly the site's pages and resources, and nothing off scope", () => {
    const responses = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!));
    const captured = new Set(responses.map((r) => pathOf(r.headers.get("warc-target-uri")!)));
    const expected = new Set([...EXPECTED_PAGE_PATHS, ...EXPECTED_RESOURCE_PATHS]);
    expect([...captured].sort()).toEqual([...expected].sort());
    for (const off of OFFSCOPE_PATHS) {
      expect(site.requests.some((r) => r.url.startsWith(off))).toBe(false);
    }
    // The same URL with the same status is stored once.
    const keys = responses.map((r) => `${httpStatus(r)} ${r.headers.get("warc-target-uri")}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("writes valid WARC/1.1 records whose digests, lengths and pointers agree", () => {
    const byId = new Map(records.map((r) => [r.headers.get("warc-record-id"), r]));
    expect(records.filter((r) => r.headers.get("warc-type") === "warcinfo").length).toBe(
      readdirSync(join(collectionDir, "archive")).length,
    );
    for (const record of records) {
      const type = record.headers.get("warc-type")!;
      expect(record.headers.get("warc-record-id")).toMatch(/^<urn:uuid:[0-9a-f-]{36}>$/);
      expect(record.headers.get("warc-date")).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      if (type === "warcinfo") continue;
      expect(record.headers.get("warc-block-digest")).toBe(sha256(record.block));
      if (type === "response") {
        expect(record.headers.get("warc-payload-digest")).toBe(sha256(record.payload));
        // Stored body is decoded: Content-Length is its real length, encodings are only kept as x-orig-*.
        expect(httpHeader(record, "content-length")).toBe(String(record.payload.length));
        expect(httpHeader(record, "content-encoding")).toBeUndefined();
        expect(httpHeader(record, "transfer-encoding")).toBeUndefined();
      }
      if (type === "request") {
        const target = byId.get(record.headers.get("warc-concurrent-to"));
        expect(["response", "revisit"]).toContain(target?.headers.get("warc-type"));
        expect(target?.headers.get("warc-target-uri")).toBe(record.headers.get("warc-target-uri"));
      }
    }
    const response = (path: string) =>
      records.find((r) => r.headers.get("warc-type") === "response" && pathOf(r.headers.get("warc-target-uri")!) === path)!;
    const gz = SITE_PAGES.find((p) => p.gzip)!;
    expect(httpHeader(response(gz.path), "x-orig-content-encoding")).toBe("gzip");
    expect(response(gz.path).payload.toString()).toContain("<html");
    const chunked = SITE_PAGES.find((p) => p.chunked)!;
    expect(httpHeader(response(chunked.path), "x-orig-transfer-encoding")).toBe("chunked");
    const redirect = SITE_PAGES.find((p) => p.redirectTo)!;
    expect(httpStatus(response(redirect.path))).toBe(301);
    expect(httpStatus(response("/site/missing.html"))).toBe(404);
    // The same image bytes under two URLs: one response, one revisit pointing at it.
    const sameBytes = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!) && DUPLICATE_PAYLOAD_PATHS.includes(pathOf(r.headers.get("warc-target-uri")!)));
    expect(sameBytes.map((r) => r.headers.get("warc-type")).sort()).toEqual(["response", "revisit"]);
    const original = sameBytes.find((r) => r.headers.get("warc-type") === "response")!;
    const revisit = sameBytes.find((r) => r.headers.get("warc-type") === "revisit")!;
    expect(revisit.headers.get("warc-refers-to-target-uri")).toBe(original.headers.get("warc-target-uri"));
    expect(revisit.headers.get("warc-refers-to-date")).toBe(original.headers.get("warc-date"));
    expect(revisit.headers.get("warc-payload-digest")).toBe(original.headers.get("warc-payload-digest"));
    expect(revisit.headers.get("warc-profile")).toBe("http://netpreserve.org/warc/1.1/revisit/identical-payload-digest");
    expect(revisit.headers.get("warc-refers-to-container")).toBe("file://e2e.wacz");
    expect(revisit.payload.length).toBe(0);
    const pdf = SITE_PAGES.find((p) => p.contentType === "application/pdf")!;
    expect(response(pdf.path).payload.subarray(0, 5).toString()).toBe("%PDF-");
  });

  it("packages a WACZ whose entries are stored and whose datapackage hashes match", () => {
    for (const { entry } of wacz.values()) expect(entry.compressionMethod).toBe(0);
    const names = [...wacz.keys()].sort();
    const warcs = readdirSync(join(collectionDir, "archive")).map((f) => `archive/${f}`);
    expect(names).toEqual(
      [...warcs, "datapackage-digest.json", "datapackage.json", "indexes/index.cdxj", "pages/extraPages.jsonl", "pages/pages.jsonl"].sort(),
    );
    const datapackage = JSON.parse(wacz.get("datapackage.json")!.data.toString());
    expect(datapackage).toMatchObject({ profile: "data-package", wacz_version: "1.1.1" });
    expect(datapackage.relation).toBeUndefined();
    expect(datapackage.resources.map((r: { path: string }) => r.path).sort()).toEqual(
      names.filter((n) => !n.startsWith("datapackage")),
    );
    for (const resource of datapackage.resources as { path: string; hash: string; bytes: number }[]) {
      const data = wacz.get(resource.path)!.data;
      expect(resource.bytes).toBe(data.length);
      expect(resource.hash).toBe(sha256(data));
    }
    const digest = JSON.parse(wacz.get("datapackage-digest.json")!.data.toString());
    expect(digest).toEqual({ path: "datapackage.json", hash: sha256(wacz.get("datapackage.json")!.data) });
  });

  it("indexes every response with a CDXJ line pointing at exactly that record", () => {
    const lines = wacz.get("indexes/index.cdxj")!.data.toString().trim().split("\n");
    const sorted = [...lines].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(lines).toEqual(sorted);
    const indexed = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!));
    expect(lines.length).toBe(indexed.length);
    for (const line of lines) {
      const cdx = JSON.parse(line.slice(line.indexOf("{")));
      const warc = wacz.get(`archive/${cdx.filename}`)!.data;
      const member = warc.subarray(Number(cdx.offset), Number(cdx.offset) + Number(cdx.length));
      const record = parseRecord(gunzipSync(member));
      expect(record.headers.get("warc-target-uri")).toBe(cdx.url);
      expect(record.headers.get("warc-payload-digest")).toBe(`sha256:${cdx.digest}`);
      expect(String(httpStatus(record))).toBe(cdx.status);
      if (record.headers.get("warc-type") === "revisit") expect(cdx.mime).toBe("warc/revisit");
    }
  });

  it("lists the seed in pages.jsonl and every other page in extraPages.jsonl", () => {
    const parse = (name: string) =>
      wacz.get(name)!.data.toString().trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const [pagesHeader, ...pages] = parse("pages/pages.jsonl");
    const [, ...extra] = parse("pages/extraPages.jsonl");
    expect(pagesHeader).toEqual({ format: "json-pages-1.0", id: "pages", title: "All Pages" });
    expect(pages.map((p) => pathOf(p.url as string))).toEqual([SEED_PATH]);
    expect(extra.map((p) => pathOf(p.url as string)).sort()).toEqual(EXPECTED_PAGE_PATHS.filter((p) => p !== SEED_PATH).sort());
    for (const page of [...pages, ...extra]) {
      const expected = SITE_PAGES.find((p) => p.path === pathOf(page.url as string))!;
      expect(page.depth).toBe(expected.depth);
      if (expected.title) expect(page.title).toBe(expected.title);
      expect(page.ts).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
  });
});

describe("assets shared by pages (no-cache + ETag), with the browser's HTTP cache on", () => {
  it("are fetched whole once per tab at most, revalidated by later pages, yet stored once as their 200 and never as a 304", () => {
    // The fixture's assets are no-cache + ETag: later pages of the crawl revalidate them (304) instead of
    // fetching them again, and the crawl, which holds their 200 already, fetches nothing more.
    expect(site.requests.filter((r) => r.status === 304).length).toBeGreaterThan(0);
    const styleLoads = site.requests.filter((r) => r.url === "/site/css/style.css" && r.status === 200).length;
    expect(styleLoads).toBeGreaterThanOrEqual(1);
    expect(styleLoads).toBeLessThanOrEqual(2); // --workers 2: each tab's first load may be its own
    const responses = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!));
    expect(responses.filter((r) => httpStatus(r) === 304).map((r) => r.headers.get("warc-target-uri"))).toEqual([]);
    for (const path of EXPECTED_RESOURCE_PATHS) {
      const stored = responses.filter((r) => pathOf(r.headers.get("warc-target-uri")!) === path);
      expect(stored.map(httpStatus), path).toEqual([200]);
      if (stored[0].headers.get("warc-type") === "response") expect(stored[0].payload.length, path).toBeGreaterThan(0);
    }
  });
});

describe("replay of the crawl's WACZ in ReplayWeb.page", () => {
  // Every HTML page (the PDF has no images or styles to check), each in a tab of one browser.
  const replayed = SITE_PAGES.filter((p) => p.contentType === "text/html").map((p) => p.path);
  let server: ReplayServer;
  let session: ReplaySession;
  beforeAll(async () => {
    server = await startReplayServer(collectionDir);
    session = await openReplaySession(server);
  }, 60_000);
  afterAll(async () => {
    await session?.close();
    await server?.close();
  });

  it.each(replayed)("replays %s with its content, every image and its stylesheet", async (path) => {
    const expected = SITE_PAGES.find((p) => p.path === path)!;
    const result = await session.replay({ source: "/archives/e2e.wacz", url: site.url + path, waitForText: expected.marker, waitForImages: true, timeoutMs: 45_000 });
    expect(detectReplayFailure(result.text)).toBeNull();
    expect(result.text).toContain(expected.marker);
    if (expected.title) expect(result.title).toBe(expected.title);
    const images = expected.resources.filter((r) => /\.png$/.test(r) && !r.endsWith("/bg.png"));
    expect(result.images.length).toBe(images.length);
    for (const image of result.images) expect(image.naturalWidth, image.src).toBeGreaterThan(0);
    if (expected.resources.includes("/site/css/style.css")) {
      expect(result.stylesheets.length).toBe(1);
      expect(result.stylesheets[0].rules).toBeGreaterThan(0);
      // body { background: #fafafa ... } from style.css
      expect(result.bodyBackground).toBe("rgb(250, 250, 250)");
    }
  }, 60_000);
});
