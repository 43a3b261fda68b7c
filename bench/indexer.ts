/**
 * Indexer benchmark: generates K valid WACZ files with M response records each (default 20 x 50,000),
 * imports them through the `indexer` program into a private local redis-server and prints JSON: CDX
 * lines per second, seconds, the importer's peak RSS, bytes read.
 *   node dist/bench/indexer.js [--wacz 20] [--records 50000] [--keep]
 * Generated files are cached in $TMPDIR/bench-indexer-KxM (reused by later runs; removed unless --keep).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { writeSyntheticWacz } from "./lib/syntheticWacz.js";

const { values } = parseArgs({
  options: { wacz: { type: "string", default: "20" }, records: { type: "string", default: "50000" }, keep: { type: "boolean", default: false } },
});
const waczCount = Number(values.wacz);
const records = Number(values.records);
const dir = join(tmpdir(), `bench-indexer-${waczCount}x${records}`);
const manifestPath = join(dir, "manifest.json");

const generateStarted = performance.now();
if (!existsSync(manifestPath)) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const resources = [];
  for (let i = 0; i < waczCount; i++) {
    const name = `bench-${i}.wacz`;
    const wacz = await writeSyntheticWacz({ dir, name, records, seed: `bench${i}` });
    rmSync(join(dir, `bench-${i}.warc.gz`));
    resources.push({ name, path: name, hash: wacz.hash, size: wacz.size, crawlId: `crawl-${i % 5}` });
  }
  writeFileSync(manifestPath, JSON.stringify({ profile: "multi-wacz-package", resources }));
}
const generateSeconds = (performance.now() - generateStarted) / 1000;

const redisDir = join(dir, "redis");
const server = new EmbeddedRedis({ dataDir: redisDir, persist: false });
const url = await server.start();
const indexerEntry = fileURLToPath(new URL("../indexer/cli.js", import.meta.url));
try {
  const started = performance.now();
  const child = spawn(process.execPath, [indexerEntry, "--redisDedupeUrl", url, "--sourceUrl", manifestPath, "--logLevel", "warn"], { stdio: ["ignore", "ignore", "inherit"] });
  let peakKb = 0;
  const sampler = setInterval(() => {
    try {
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0));
    } catch {
      // process gone
    }
  }, 100);
  const code: number = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? -1)));
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  const redis = new Redis(url);
  const lines = Number(await redis.hget("allcounts", "totalUrls"));
  const hashes = await redis.hlen("allhashes");
  const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);
  redis.disconnect();
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { resources: { size: number }[] };
  console.log(JSON.stringify({
    benchmark: "indexer",
    exitCode: code,
    waczFiles: waczCount,
    recordsPerWacz: records,
    cdxLines: lines,
    hashes,
    seconds: Math.round(seconds * 100) / 100,
    linesPerSecond: Math.round(lines / seconds),
    importerPeakRssMB: Math.round(peakKb / 102.4) / 10,
    // Local files are read whole only for their sha256 when a manifest gives none; this one gives them.
    waczBytesTotal: manifest.resources.reduce((sum, r) => sum + r.size, 0),
    redisUsedMemoryMB: Math.round(usedMemory / 1e5) / 10,
    generateSeconds: Math.round(generateSeconds * 10) / 10,
  }));
} finally {
  await server.stop();
  rmSync(redisDir, { recursive: true, force: true });
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}
