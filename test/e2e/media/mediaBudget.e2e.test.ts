/**
 * A stream's files together stop at --maxResourceSize (issue 27): a page of the media site that fetches the HLS
 * master and plays nothing (so every segment stored is the crawler's own fetch), crawled with a budget of one 640x360
 * segment (four files are fetched at a time: those under way when it is reached still come). The crawler's own fetches of the kept rendition stop there (the rest
 * counted as skipped, the stream not complete); what it stored is a prefix in playing order; nothing of the
 * 320x180 rendition is stored; the page itself is crawled.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MANIFEST_ONLY_PAGE, startMediaSite, type MediaSite } from "../../../fixtures/mediaSite.js";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { httpStatus, readWarcRecords } from "../../helpers/warcFile.js";

let site: MediaSite;
let cwd: string;
let crawl: CliResult;
let budget: number;
let segmentSize: number;

beforeAll(async () => {
  site = await startMediaSite();
  const { high } = site.catalog.hls;
  const sizes = await Promise.all(high.segments.map(async (path) => (await (await fetch(site.url + path)).arrayBuffer()).byteLength));
  segmentSize = Math.max(...sizes);
  budget = segmentSize;
  cwd = mkdtempSync(join(tmpdir(), "media-budget-"));
  crawl = await runCli("crawl", [
    "--url", `${site.url}${MANIFEST_ONLY_PAGE}`, "--scopeType", "page", "--collection", "budget", "--cwd", cwd, "--maxResourceSize", String(budget),
  ], { timeoutMs: 180_000 });
}, 200_000);

afterAll(async () => {
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("a stream's budget: --maxResourceSize for all its files", () => {
  it("stops the crawler's fetches of the stream there, says so, and the page is crawled", () => {
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    const line = logLines(crawl.stderr).find((l) => l.message === "stream captured")?.details;
    expect(line).toMatchObject({ rendition: "640x360", complete: false });
    expect(Number(line?.skipped)).toBeGreaterThan(0);
    // Checked before each fetch, four at a time: at most four files past the budget.
    expect(Number(line?.bytes)).toBeLessThanOrEqual(budget + 4 * segmentSize);
    expect(logLines(crawl.stderr).some((l) => l.message === "page crawled")).toBe(true);
  });

  it("stores a prefix of the kept rendition in playing order, and nothing of the other one", () => {
    const archive = join(cwd, "collections", "budget", "archive");
    const stored = new Set(readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)))
      .filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type") ?? "") && httpStatus(r) === 200)
      .map((r) => (r.headers.get("warc-target-uri") ?? "").slice(site.url.length)));
    const { high, low } = site.catalog.hls;
    expect([...stored].filter((p) => p.startsWith(low.playlist.replace(/index\.m3u8$/, "")))).toEqual([]);
    const kept = high.segments.map((s) => stored.has(s));
    expect(kept.indexOf(false), `stored: ${JSON.stringify(kept)}`).toBeGreaterThan(0);
    // No hole: once a segment is missing, so are all after it.
    expect(kept.slice(kept.indexOf(false)).some(Boolean), `stored: ${JSON.stringify(kept)}`).toBe(false);
  });
});
