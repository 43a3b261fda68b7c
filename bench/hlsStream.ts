/**
 * A page with a long two-rendition HLS stream (fixtures/mediaSite.ts, `--seconds` of 320x180 and 640x360
 * video, an audio group and subtitles, 2 s segments), crawled alone with default behaviors: the crawler keeps
 * the 640x360 rendition and fetches every file of it (capture/adaptiveStreams.ts). Prints one JSON line per
 * run: the crawl's seconds, the kept rendition's files and bytes on the site against what the archive stored
 * and what both renditions weigh, the bytes the site served (the player's fetches and the crawler's), the
 * crawler's peak RSS and the collection's size on disk.
 *   node dist/bench/hlsStream.js [--seconds 600] [--runs 1]
 * The first run with a new --seconds makes the media with ffmpeg (about 50 s for 600 s) into .cache/media/.
 */
import { spawn } from "node:child_process";
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { WARCParser } from "warcio";
import { startMediaSite, type HlsStreamPaths } from "../fixtures/mediaSite.js";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "600" }, runs: { type: "string", default: "1" } } });
const crawlEntry = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));
const site = await startMediaSite({ hlsSeconds: Number(values.seconds) });
const hls = site.catalog.hls;

/** Bytes of each path, as the site serves it. */
async function sizes(paths: string[]): Promise<Map<string, number>> {
  const result = new Map<string, number>();
  for (const path of paths) result.set(path, (await (await fetch(site.url + path)).arrayBuffer()).byteLength);
  return result;
}
const kept = (s: HlsStreamPaths) => [s.high.playlist, s.high.init, ...s.high.segments, s.audio.playlist, s.audio.init, ...s.audio.segments, s.subtitles.playlist, ...s.subtitles.segments];
const low = (s: HlsStreamPaths) => [s.low.playlist, s.low.init, ...s.low.segments];
const sizeOf = await sizes([hls.master, ...kept(hls), ...low(hls)]);
const sum = (paths: string[]) => paths.reduce((total, path) => total + (sizeOf.get(path) ?? 0), 0);

/** Payload bytes of the stored 200 responses under /hls/ (revisits count as stored, with no bytes of their own). */
async function storedUnder(archiveDir: string): Promise<{ files: number; payloadBytes: number }> {
  let files = 0;
  let payloadBytes = 0;
  for (const name of readdirSync(archiveDir).filter((f) => f.endsWith(".warc.gz"))) {
    for await (const record of new WARCParser(createReadStream(join(archiveDir, name)))) {
      const url = record.warcTargetURI ?? "";
      if (!url.startsWith(`${site.url}/hls/`) || !["response", "revisit"].includes(record.warcType ?? "")) continue;
      files += 1;
      payloadBytes += (await record.readFully(true)).length;
    }
  }
  return { files, payloadBytes };
}

function duBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? duBytes(path) : statSync(path).size;
  }
  return total;
}

for (let run = 0; run < Number(values.runs); run++) {
  const cwd = mkdtempSync(join(tmpdir(), "bench-hls-"));
  site.requests.length = 0;
  const started = Date.now();
  const child = spawn(process.execPath, [crawlEntry, "--url", `${site.url}${site.catalog.pages.hls}`, "--scopeType", "page", "--generateWACZ", "--collection", "hls", "--cwd", cwd], { stdio: ["ignore", "ignore", "pipe"] });
  let peakRss = 0;
  const sampler = setInterval(() => {
    try {
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1];
      if (rss) peakRss = Math.max(peakRss, Number(rss) * 1024);
    } catch {
      // exited
    }
  }, 200);
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearInterval(sampler);
  const seconds = (Date.now() - started) / 1000;
  const collection = join(cwd, "collections", "hls");
  const stored = await storedUnder(join(collection, "archive"));
  const served = site.requests.filter((r) => r.path.startsWith("/hls/"));
  const line = stderr.split("\n").find((l) => l.includes('"stream captured"'));
  console.log(JSON.stringify({
    benchmark: "hlsStream", streamSeconds: Number(values.seconds), exitCode: code, seconds: Math.round(seconds * 10) / 10,
    keptRendition: { files: kept(hls).length + 1, bytes: sum([hls.master, ...kept(hls)]) },
    bothRenditions: { bytes: sum([hls.master, ...kept(hls), ...low(hls)]) },
    stored: { files: stored.files, payloadBytes: stored.payloadBytes, lowRenditionFiles: served.filter((r) => r.path.startsWith("/hls/video-180/")).length },
    servedBySite: { requests: served.length, bytes: sum(served.map((r) => r.path)) },
    crawlerPeakRssMiB: Math.round(peakRss / 1048576), collectionMiB: Math.round(duBytes(collection) / 1048576 * 10) / 10,
    streamLine: line ? (JSON.parse(line) as { details: unknown }).details : null,
  }));
  rmSync(cwd, { recursive: true, force: true });
}
await site.close();
