/**
 * Indexer benchmark: generates K valid WACZ files with M response records each (default 20 x 50,000),
 * imports them through the `indexer` program into a private local redis-server and prints one JSON
 * line per index format: CDX lines per second, the importer's peak RSS, and the floor measured in the
 * same run: `redis-cli --pipe` of the two HSETNX per line an import needs (h:<crawlId> and allhashes),
 * on the same server, and the importer's share of it.
 *   node dist/bench/indexer.js [--wacz 20] [--records 50000] [--format zipnum|plain|both] [--keep]
 * Generated files are cached in $TMPDIR/bench-indexer-<format>-KxM (reused by later runs; removed unless --keep).
 */
import { spawn } from "node:child_process";
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { formatHashEntry } from "../src/dedupe/keys.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { iterWaczCdxjRecordBatches, openWacz } from "../indexer/wacz/index.js";
import { writeSyntheticWacz } from "./lib/syntheticWacz.js";

const { values } = parseArgs({
  options: {
    wacz: { type: "string", default: "20" },
    records: { type: "string", default: "50000" },
    format: { type: "string", default: "both" },
    keep: { type: "boolean", default: false },
  },
});
const waczCount = Number(values.wacz);
const records = Number(values.records);
if (!["zipnum", "plain", "both"].includes(values.format!)) throw new Error("--format must be zipnum, plain or both");
const formats = values.format === "both" ? (["plain", "zipnum"] as const) : [values.format as "plain" | "zipnum"];
const indexerEntry = fileURLToPath(new URL("../indexer/cli.js", import.meta.url));
// Run the indexer as installed: with the node options of its #! line.
const indexerNodeFlags = /^#!\/usr\/bin\/env -S node(.*)$/m.exec(readFileSync(indexerEntry, "utf8").split("\n")[0]!)?.[1]?.trim().split(/\s+/).filter(Boolean) ?? [];

interface Resource { name: string; path: string; hash: string; size: number; crawlId: string }

async function generate(dir: string, format: "plain" | "zipnum"): Promise<number> {
  const started = performance.now();
  const manifestPath = join(dir, "manifest.json");
  if (existsSync(manifestPath)) return 0;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const resources: Resource[] = [];
  for (let i = 0; i < waczCount; i++) {
    const name = `bench-${i}.wacz`;
    const wacz = await writeSyntheticWacz({ dir, name, records, seed: `bench${i}`, plainIndex: format === "plain" });
    rmSync(join(dir, `bench-${i}.warc.gz`));
    resources.push({ name, path: name, hash: wacz.hash, size: wacz.size, crawlId: `crawl-${i % 5}` });
  }
  writeFileSync(manifestPath, JSON.stringify({ profile: "multi-wacz-package", resources }));
  return (performance.now() - started) / 1000;
}

function resp(args: string[]): string {
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
  return out;
}

/** The floor's input: two HSETNX per CDX line, in Redis protocol, written once per data set. */
async function writeFloorCommands(dir: string, resources: Resource[]): Promise<string> {
  const path = join(dir, "floor.resp");
  if (existsSync(path)) return path;
  const out = createWriteStream(path + ".tmp");
  for (const [waczIndex, r] of resources.entries()) {
    const reader = await openWacz(pathToFileURL(join(dir, r.path)).href);
    try {
      for await (const batch of iterWaczCdxjRecordBatches(reader)) {
        let text = "";
        for (const cdx of batch) {
          const digest = "sha256:" + cdx.digest!;
          text += resp(["HSETNX", `h:${r.crawlId}`, digest, formatHashEntry({ waczIndex, date: cdx.timestamp, url: cdx.url, size: Number(cdx.length) })]);
          text += resp(["HSETNX", "allhashes", digest, r.crawlId]);
        }
        if (!out.write(text)) await once(out, "drain");
      }
    } finally {
      await reader.close();
    }
  }
  out.end();
  await once(out, "finish");
  renameSync(path + ".tmp", path);
  return path;
}

async function floorSeconds(port: number, commands: string): Promise<number> {
  const started = performance.now();
  const child = spawn("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "--pipe"], { stdio: ["pipe", "ignore", "inherit"] });
  createReadStream(commands).pipe(child.stdin);
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`redis-cli --pipe exited with ${code}`);
  return (performance.now() - started) / 1000;
}

async function importRun(url: string, manifestPath: string): Promise<{ code: number; seconds: number; peakKb: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [...indexerNodeFlags, indexerEntry, "--redisDedupeUrl", url, "--sourceUrl", manifestPath, "--logLevel", "warn"], { stdio: ["ignore", "ignore", "inherit"] });
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
  return { code, seconds: (performance.now() - started) / 1000, peakKb };
}

for (const format of formats) {
  const dir = join(tmpdir(), `bench-indexer-${format}-${waczCount}x${records}`);
  const manifestPath = join(dir, "manifest.json");
  const generateSeconds = await generate(dir, format);
  const resources = (JSON.parse(readFileSync(manifestPath, "utf8")) as { resources: Resource[] }).resources;
  const commands = await writeFloorCommands(dir, resources);

  const redisDir = join(dir, "redis");
  const server = new EmbeddedRedis({ dataDir: redisDir, persist: false });
  const url = await server.start();
  const redis = new Redis(url);
  try {
    const floor = await floorSeconds(server.port, commands);
    const floorLines = await redis.hlen("allhashes");
    await redis.flushall();
    const run = await importRun(url, manifestPath);
    const lines = Number(await redis.hget("allcounts", "totalUrls"));
    const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);
    const linesPerSecond = Math.round(lines / run.seconds);
    const floorLinesPerSecond = Math.round(floorLines / floor);
    console.log(JSON.stringify({
      benchmark: "indexer",
      format,
      exitCode: run.code,
      waczFiles: waczCount,
      recordsPerWacz: records,
      cdxLines: lines,
      hashes: await redis.hlen("allhashes"),
      seconds: Math.round(run.seconds * 100) / 100,
      linesPerSecond,
      floorLinesPerSecond,
      share: Math.round((linesPerSecond / floorLinesPerSecond) * 100) / 100,
      importerPeakRssMB: Math.round(run.peakKb / 102.4) / 10,
      // Local files are read whole only for their sha256 when a manifest gives none; this one gives them.
      waczBytesTotal: resources.reduce((sum, r) => sum + r.size, 0),
      redisUsedMemoryMB: Math.round(usedMemory / 1e5) / 10,
      generateSeconds: Math.round(generateSeconds * 10) / 10,
    }));
  } finally {
    redis.disconnect();
    await server.stop();
    rmSync(redisDir, { recursive: true, force: true });
    if (!values.keep) rmSync(dir, { recursive: true, force: true });
  }
}
