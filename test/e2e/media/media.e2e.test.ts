/**
 * Video and audio that replay (issue 27): one crawl of the media site (fixtures/mediaSite.ts) with the default
 * behaviors, then what an archive's user would see. Progressive files are stored whole; of each HLS and DASH
 * stream exactly the rendition ReplayWeb.page will ask for (640x360: it keeps the largest up to 1280x720) is
 * stored, every segment of it, with the manifest rewritten to list only that rendition and the original kept as
 * a metadata record; a live stream is cut in bounded time; a FairPlay stream is recorded as found. Then each
 * player plays to its end in ReplayWeb.page with no request answered "not in archive".
 *
 * Stored means a 200 `response` record, or a `revisit` of identical bytes: /hls-poster/ serves the /hls/ files
 * and the live segments loop the clip, so the crawl's identical-payload dedupe writes revisits for those.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMediaSite, type HlsStreamPaths, type MediaCatalog, type ProgressiveFile } from "../../../fixtures/mediaSite.js";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { startReplayServer, type ReplayServer } from "../../helpers/replay.js";
import { playedThrough, replayMedia } from "../../helpers/replayMedia.js";
import { httpStatus, readWarcRecords, sha256, type RawRecord } from "../../helpers/warcFile.js";

/** The live page must be done within this long of its load (a 90 s behavior timeout is not a bound a user waits for). */
const LIVE_PAGE_BOUND_SECONDS = 60;
const COLLECTION = "media";

let siteUrl: string;
let catalog: MediaCatalog;
let cwd: string;
let crawl: CliResult;
let collectionDir: string;
let records: RawRecord[];

beforeAll(async () => {
  const site = await startMediaSite();
  siteUrl = site.url;
  catalog = site.catalog;
  cwd = mkdtempSync(join(tmpdir(), "media-e2e-"));
  try {
    crawl = await runCli("crawl", [
      "--url", `${site.url}/index.html`, "--scopeType", "prefix", "--generateWACZ", "--collection", COLLECTION, "--cwd", cwd, "--workers", "2",
    ], { timeoutMs: 380_000 });
  } finally {
    // Replay must find everything in the archive: nothing may come from the live site any more.
    await site.close();
  }
  collectionDir = join(cwd, "collections", COLLECTION);
  const archive = join(collectionDir, "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 400_000);

afterAll(() => {
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

const type = (r: RawRecord): string => r.headers.get("warc-type") ?? "";
const target = (r: RawRecord): string => r.headers.get("warc-target-uri") ?? "";
/** Path and query of a record's URL on the site. */
const pathOf = (r: RawRecord): string => (target(r).startsWith(siteUrl) ? target(r).slice(siteUrl.length) : target(r));

/** Paths under `prefix` with a 200 response record, or a revisit of one. */
function storedPaths(prefix: string): string[] {
  const stored = records.filter((r) => (type(r) === "response" || type(r) === "revisit") && httpStatus(r) === 200 && pathOf(r).startsWith(prefix));
  return [...new Set(stored.map(pathOf))].sort();
}

/** The record storing a path (its response, else its revisit); undefined when none. */
function storedRecord(path: string): RawRecord | undefined {
  const all = records.filter((r) => pathOf(r) === path && (type(r) === "response" || type(r) === "revisit"));
  return all.find((r) => type(r) === "response") ?? all[0];
}

/** The bytes replay serves for a path: a revisit's are those of the response with the same payload digest. */
function storedBody(path: string): string | null {
  const record = storedRecord(path);
  if (!record) return null;
  if (type(record) === "response") return record.payload.toString("utf8");
  const digest = record.headers.get("warc-payload-digest");
  const original = records.find((r) => type(r) === "response" && r.headers.get("warc-payload-digest") === digest);
  return original ? original.payload.toString("utf8") : null;
}

/** What of one HLS stream replay asks for: the master, the 640x360 rendition, the audio and the subtitles. */
function hlsReplaySet(stream: HlsStreamPaths): string[] {
  const { master, high, audio, subtitles } = stream;
  return [master, high.playlist, high.init, ...high.segments, audio.playlist, audio.init, ...audio.segments, subtitles.playlist, ...subtitles.segments].sort();
}

function lowRenditionPaths(stream: HlsStreamPaths): string[] {
  return [stream.low.playlist, stream.low.init, ...stream.low.segments];
}

/** The variant streams a master playlist lists: each EXT-X-STREAM-INF's RESOLUTION and the URI after it. */
function variants(master: string): { resolution: string; uri: string }[] {
  const lines = master.split("\n").map((l) => l.trim());
  return lines.flatMap((line, i) => (line.startsWith("#EXT-X-STREAM-INF:") ? [{ resolution: /RESOLUTION=(\d+x\d+)/.exec(line)?.[1] ?? "", uri: lines[i + 1] ?? "" }] : []));
}

/** Each Representation of an MPD by id, with its size. */
function representations(mpd: string): { id: string; width: string | null; height: string | null }[] {
  return [...mpd.matchAll(/<Representation\b[^>]*>/g)].map(([tag]) => ({
    id: /\bid="([^"]*)"/.exec(tag)?.[1] ?? "",
    width: /\bwidth="(\d+)"/.exec(tag)?.[1] ?? null,
    height: /\bheight="(\d+)"/.exec(tag)?.[1] ?? null,
  }));
}

/** The WARC-JSON-Metadata of a path's stored record. */
function jsonMetadata(path: string): Record<string, unknown> {
  const header = storedRecord(path)?.headers.get("warc-json-metadata");
  return header ? (JSON.parse(header) as Record<string, unknown>) : {};
}

/** The metadata record keeping a rewritten manifest's original, as served. */
function originalManifest(path: string): RawRecord | undefined {
  return records.find((r) => type(r) === "metadata" && pathOf(r) === path);
}

function expectOriginalKept(path: string, stored: RawRecord | undefined, listsEveryRendition: (body: string) => void): void {
  const original = originalManifest(path);
  expect(original, `a metadata record for ${path}`).toBeDefined();
  expect(original!.headers.get("content-type")).toBe("application/http; msgtype=response");
  expect(original!.headers.get("warc-refers-to")).toBe(stored?.headers.get("warc-record-id"));
  listsEveryRendition(original!.payload.toString("utf8"));
}

function expectStoredWhole(file: ProgressiveFile): void {
  const all = records.filter((r) => pathOf(r) === file.path && (type(r) === "response" || type(r) === "revisit"));
  expect(all.map((r) => [type(r), httpStatus(r)]), `${file.path}: one 200 response`).toEqual([["response", 200]]);
  expect(all[0]!.payload.length, `${file.path}: the whole file`).toBe(file.bytes.length);
  expect(sha256(all[0]!.payload)).toBe(file.sha256);
}

describe("the crawl", () => {
  it("finishes with every page crawled", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    const crawled = logLines(crawl.stderr).filter((l) => l.message === "page crawled").map((l) => String(l.details.url).slice(siteUrl.length));
    expect(crawled.sort()).toEqual(["/index.html", ...Object.values(catalog.pages)].sort());
  });

  it("stores no partial (206) response of any media", () => {
    expect(records.filter((r) => type(r) === "response" && httpStatus(r) === 206).map(pathOf)).toEqual([]);
  });
});

describe("progressive media: each file stored whole as one 200 response", () => {
  it("<video src> MP4", () => expectStoredWhole(catalog.progressive.mp4));
  it("<source> WebM", () => expectStoredWhole(catalog.progressive.webm));
  it("<audio preload=none> M4A (fetched only once autoplay plays it)", () => expectStoredWhole(catalog.progressive.m4a));
});

describe("HLS", () => {
  it("stores exactly the 640x360 rendition, the audio and the subtitles, every segment, none of 320x180", () => {
    const stored = storedPaths("/hls/");
    expect(stored.filter((p) => lowRenditionPaths(catalog.hls).includes(p)), "320x180 stored").toEqual([]);
    expect(stored).toEqual(hlsReplaySet(catalog.hls));
  });

  it("stores the master rewritten to the 640x360 rendition, with maxRes and maxBand in its WARC-JSON-Metadata", () => {
    const master = storedBody(catalog.hls.master);
    expect(master).not.toBeNull();
    expect(variants(master!)).toEqual([{ resolution: "640x360", uri: "video-360/index.m3u8" }]);
    const metadata = jsonMetadata(catalog.hls.master);
    expect(typeof metadata.maxRes, JSON.stringify(metadata)).toBe("number");
    expect(typeof metadata.maxBand, JSON.stringify(metadata)).toBe("number");
  });

  it("keeps the original master (both renditions) as a metadata record referring to the stored one", () => {
    expectOriginalKept(catalog.hls.master, storedRecord(catalog.hls.master), (body) => {
      expect(variants(body).map((v) => v.resolution)).toEqual(["320x180", "640x360"]);
    });
  });
});

describe("DASH", () => {
  it("stores the MPD rewritten to the 640x360 Representation and the audio one", () => {
    const mpd = storedBody(catalog.dash.mpd);
    expect(mpd).not.toBeNull();
    expect(representations(mpd!)).toEqual([
      { id: catalog.dash.high.id, width: "640", height: "360" },
      { id: catalog.dash.audio.id, width: null, height: null },
    ]);
  });

  it("stores every init and media segment of those two Representations, none of 320x180", () => {
    const { mpd, low, high, audio } = catalog.dash;
    const stored = storedPaths("/dash/");
    expect(stored.filter((p) => [low.init, ...low.segments].includes(p)), "320x180 stored").toEqual([]);
    expect(stored).toEqual([mpd, high.init, ...high.segments, audio.init, ...audio.segments].sort());
  });

  it("keeps the original MPD (three Representations) as a metadata record referring to the stored one", () => {
    expectOriginalKept(catalog.dash.mpd, storedRecord(catalog.dash.mpd), (body) => {
      expect(representations(body).map((r) => r.id)).toEqual([catalog.dash.low.id, catalog.dash.high.id, catalog.dash.audio.id]);
    });
  });
});

describe("a player behind a poster (autoplay clicks it)", () => {
  it("stores the poster stream as the HLS one: the 640x360 rendition, audio, subtitles, every segment", () => {
    const stored = storedPaths("/hls-poster/");
    expect(stored.filter((p) => lowRenditionPaths(catalog.hlsPoster).includes(p)), "320x180 stored").toEqual([]);
    expect(stored).toEqual(hlsReplaySet(catalog.hlsPoster));
    expect(variants(storedBody(catalog.hlsPoster.master) ?? "")).toEqual([{ resolution: "640x360", uri: "video-360/index.m3u8" }]);
  });
});

describe("a live stream (no ENDLIST)", () => {
  it("is cut in bounded time: the crawl finishes and the page is done soon after its load", () => {
    expect(crawl.code).toBe(0);
    const url = `${siteUrl}${catalog.pages.live}`;
    // Pages other than seeds are listed in extraPages.jsonl, with the time the page was loaded.
    const loaded = ["pages.jsonl", "extraPages.jsonl"]
      .flatMap((name) => readFileSync(join(collectionDir, "pages", name), "utf8").split("\n"))
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { url?: string; ts?: string })
      .find((p) => p.url === url);
    const crawled = logLines(crawl.stderr).find((l) => l.message === "page crawled" && l.details.url === url);
    expect(loaded?.ts !== undefined && crawled !== undefined, "the live page is in the page lists and logged as crawled").toBe(true);
    const seconds = (Date.parse(crawled!.timestamp) - Date.parse(loaded!.ts!)) / 1000;
    expect(seconds, `the live page took ${seconds} s from its load to its end`).toBeLessThan(LIVE_PAGE_BOUND_SECONDS);
  });

  it("stores its playlist and at least 3 segments", () => {
    expect(storedPaths(catalog.live.playlist)).toEqual([catalog.live.playlist]);
    expect(storedPaths("/live/seg-").length).toBeGreaterThanOrEqual(catalog.live.windowSegments);
  });
});

describe("an encrypted stream (FairPlay SAMPLE-AES)", () => {
  it("is recorded as found: the crawl finishes and both playlists are stored", () => {
    expect(crawl.code).toBe(0);
    expect(storedPaths("/drm/").filter((p) => p.endsWith(".m3u8"))).toEqual([catalog.encrypted.master, catalog.encrypted.playlist].sort());
    expect(storedBody(catalog.encrypted.playlist)).toContain("METHOD=SAMPLE-AES");
  });
});

describe("the page log: one line per stream and per progressive file, saying what the archive got", () => {
  const mediaLines = () => logLines(crawl.stderr).filter((l) => l.context === "media");
  const streamLine = (manifest: string) => mediaLines().find((l) => l.message === "stream captured" && l.details.manifest === `${siteUrl}${manifest}`)?.details;

  it("HLS, DASH and the poster's stream: the kept rendition, every file stored, complete", () => {
    const hlsFiles = hlsReplaySet(catalog.hls).filter((p) => !p.endsWith(".m3u8")).length;
    expect(streamLine(catalog.hls.master)).toMatchObject({ page: `${siteUrl}${catalog.pages.hls}`, format: "hls", rendition: "640x360", files: hlsFiles, stored: hlsFiles, complete: true });
    expect(streamLine(catalog.hlsPoster.master)).toMatchObject({ page: `${siteUrl}${catalog.pages.poster}`, rendition: "640x360", files: hlsFiles, stored: hlsFiles, complete: true });
    const dash = streamLine(catalog.dash.mpd);
    const dashFiles = [catalog.dash.high, catalog.dash.audio].reduce((n, r) => n + 1 + r.segments.length, 0); // init + segments each
    expect(dash).toMatchObject({ format: "dash", rendition: "640x360", segments: catalog.dash.high.segments.length + catalog.dash.audio.segments.length, files: dashFiles, stored: dashFiles, complete: true });
  });

  it("the live stream is marked live, cut at its page's end", () => {
    expect(streamLine(catalog.live.playlist)).toMatchObject({ format: "hls", live: true, complete: false });
  });

  it("the FairPlay stream is reported encrypted", () => {
    const warning = mediaLines().find((l) => l.message.startsWith("encrypted stream") && l.details.manifest === `${siteUrl}${catalog.encrypted.master}`);
    expect(warning?.details.encryption).toBe("SAMPLE-AES com.apple.streamingkeydelivery");
    expect(streamLine(catalog.encrypted.master)).toMatchObject({ encrypted: ["SAMPLE-AES com.apple.streamingkeydelivery"] });
  });

  it("each progressive file the browser asked for in ranges: fetched whole, its size", () => {
    const files = mediaLines().filter((l) => l.message === "media file captured whole").map((l) => [String(l.details.url).slice(siteUrl.length), l.details.bytes]);
    expect(files).toContainEqual([catalog.progressive.mp4.path, catalog.progressive.mp4.bytes.length]);
    expect(files).toContainEqual([catalog.progressive.webm.path, catalog.progressive.webm.bytes.length]);
  });
});

describe.concurrent("replay in ReplayWeb.page: each player plays to its end, nothing is missing from the archive", () => {
  let server: ReplayServer;
  beforeAll(async () => {
    server = await startReplayServer(collectionDir);
  });
  afterAll(async () => {
    await server?.close();
  });

  const cases: { name: string; page: keyof MediaCatalog["pages"]; tag: "video" | "audio"; click?: string }[] = [
    { name: "progressive MP4", page: "progressive", tag: "video" },
    { name: "WebM", page: "webm", tag: "video" },
    { name: "audio", page: "audio", tag: "audio" },
    { name: "HLS (hls.js)", page: "hls", tag: "video" },
    { name: "DASH (dash.js)", page: "dash", tag: "video" },
    { name: "the poster's HLS player, after a click on the poster", page: "poster", tag: "video", click: ".video-poster" },
  ];
  for (const { name, page, tag, click } of cases) {
    it(name, async () => {
      const result = await replayMedia(server, { source: `/archives/${COLLECTION}.wacz`, url: `${siteUrl}${catalog.pages[page]}`, click });
      const context = JSON.stringify({ media: result.media, console: result.console.filter((l) => !l.startsWith("debug")).slice(-10) });
      expect(result.notFound, `answered "not in archive"; ${context}`).toEqual([]);
      expect(result.media.map((m) => m.tag), context).toEqual([tag]);
      const [media] = result.media;
      expect(media!.errorCode, context).toBeNull();
      expect(media!.duration, context).toBeGreaterThan(11.5);
      expect(playedThrough(media!), `played to the end; ${context}`).toBe(true);
    }, 120_000);
  }
});
