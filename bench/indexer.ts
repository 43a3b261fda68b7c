/**
 * Indexer benchmark: generates K valid WACZ files with M response records each (default 20 x 50,000),
 * imports them through the `indexer` program into a private local redis-server and prints one JSON
 * line per index format: CDX lines per second, the importer's peak RSS, and the floor measured in the
 * same run: `redis-cli --pipe` of the two HSETNX per line an import needs (h:<crawlId> and allhashes)
 * into a fresh private redis-server, and the importer's share of it.
 * Formats: plain and zipnum are our crawler's WACZ files; pywb and pywb-zipnum hold the same archive with
 * its index as pywb / cdxj-indexer write it (`{"url": "...", "digest": "<hex>", "length": "1234", ...}`),
 * plain or ZipNum.
 *   node dist/bench/indexer.js [--wacz 20] [--records 50000] [--format plain,zipnum,pywb,pywb-zipnum|both|all]
 *                              [--runs 1] [--cpuProf <dir>] [--keep]
 * --cpuProf writes the importer's V8 CPU profile there and adds its top functions (self time) to the JSON.
 * Each line also has the Redis time per CDX line of each command (INFO commandstats) of the import and the floor.
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
import { formatHashEntry } from "../src/dedupe/indexKeys.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { iterWaczCdxjRecordBatches, openWacz } from "../src/wacz/reader/index.js";
import { payloadDigestOf } from "../indexer/importWacz.js";
import { topSelfTime } from "./lib/cpuProfile.js";
import { writePywbWacz } from "./lib/pywbWacz.js";
import { writeSyntheticWacz } from "./lib/syntheticWacz.js";

const { values } = parseArgs({
  options: {
    wacz: { type: "string", default: "20" },
    records: { type: "string", default: "50000" },
    format: { type: "string", default: "both" },
    runs: { type: "string", default: "1" },
    cpuProf: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const waczCount = Number(values.wacz);
const records = Number(values.records);
const FORMATS = ["plain", "zipnum", "pywb", "pywb-zipnum"] as const;
type Format = (typeof FORMATS)[number];
const formats = (values.format === "both" ? "plain,zipnum" : values.format === "all" ? FORMATS.join(",") : values.format!).split(",") as Format[];
for (const f of formats) if (!FORMATS.includes(f)) throw new Error(`--format: ${f} is not one of ${FORMATS.join(", ")}, both, all`);
const runs = Number(values.runs);
const indexerEntry = fileURLToPath(new URL("../indexer/cli.js", import.meta.url));
// Run the indexer as installed: with the node options of its #! line.
const indexerNodeFlags = /^#!\/usr\/bin\/env -S node(.*)$/m.exec(readFileSync(indexerEntry, "utf8").split("\n")[0]!)?.[1]?.trim().split(/\s+/).filter(Boolean) ?? [];

interface Resource { name: string; path: string; hash: string; size: number; crawlId: string }

async function generate(dir: string, format: Format): Promise<number> {
  const started = performance.now();
  const manifestPath = join(dir, "manifest.json");
  if (existsSync(manifestPath)) return 0;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const resources: Resource[] = [];
  for (let i = 0; i < waczCount; i++) {
    const name = `bench-${i}.wacz`;
    const seed = `bench${i}`;
    const wacz = format.startsWith("pywb")
      ? await writePywbWacz({ dir, name, records, seed, zipNum: format === "pywb-zipnum" })
      : await writeSyntheticWacz({ dir, name, records, seed, plainIndex: format === "plain" });
    rmSync(join(dir, `bench-${i}.warc.gz`), { force: true });
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
          const digest = payloadDigestOf(cdx.digest!);
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

/**
 * Samples a child's peak RSS and CPU seconds (user + system) from /proc while it runs: on a shared
 * machine, wall-clock rates swing with other load, CPU seconds per line much less.
 */
function sampleChild(pid: number): { stop: () => { peakKb: number; cpuSeconds: number } } {
  let peakKb = 0;
  let cpuSeconds = 0;
  const sample = () => {
    try {
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0));
      // Fields after the command name: state is the 3rd field, utime and stime the 14th and 15th.
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    } catch {
      // process gone
    }
  };
  const timer = setInterval(sample, 50);
  return { stop: () => (clearInterval(timer), { peakKb, cpuSeconds }) };
}
const CLOCK_TICKS = 100;

async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info("cpu");
  return Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)![1]);
}

/**
 * Microseconds per CDX line spent in each command (INFO commandstats), for the commands that took a
 * visible share: where Redis spends its time. A script's time includes the commands it calls (listed too).
 */
async function commandUsPerLine(redis: Redis, lines: number): Promise<Record<string, number>> {
  const stats = await redis.info("commandstats");
  const result: Record<string, number> = {};
  for (const [, name, usec] of stats.matchAll(/cmdstat_([\w|]+):calls=\d+,usec=(\d+)/g)) {
    const perLine = Math.round((Number(usec) / lines) * 100) / 100;
    if (perLine >= 0.05) result[name!] = perLine;
  }
  return result;
}

async function floorRun(port: number, commands: string): Promise<{ seconds: number; cliCpuSeconds: number }> {
  const started = performance.now();
  const child = spawn("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "--pipe"], { stdio: ["pipe", "ignore", "inherit"] });
  const sampler = sampleChild(child.pid!);
  createReadStream(commands).pipe(child.stdin);
  const [code] = (await once(child, "exit")) as [number | null];
  const { cpuSeconds } = sampler.stop();
  if (code !== 0) throw new Error(`redis-cli --pipe exited with ${code}`);
  return { seconds: (performance.now() - started) / 1000, cliCpuSeconds: cpuSeconds };
}

async function importRun(url: string, manifestPath: string, profileDir?: string): Promise<{ code: number; seconds: number; peakKb: number; cpuSeconds: number }> {
  const started = performance.now();
  const profileFlags = profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
  const child = spawn(process.execPath, [...indexerNodeFlags, ...profileFlags, indexerEntry, "--redisDedupeUrl", url, "--sourceUrl", manifestPath, "--logLevel", "warn"], { stdio: ["ignore", "ignore", "inherit"] });
  const sampler = sampleChild(child.pid!);
  const code: number = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? -1)));
  return { code, seconds: (performance.now() - started) / 1000, ...sampler.stop() };
}

function perLine(seconds: number, lines: number): number {
  return Math.round((seconds / lines) * 1e8) / 100;
}

async function withServer<T>(dir: string, use: (server: EmbeddedRedis, redis: Redis) => Promise<T>): Promise<T> {
  const server = new EmbeddedRedis({ dataDir: dir, persist: false });
  const redis = new Redis(await server.start());
  try {
    return await use(server, redis);
  } finally {
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const format of formats) {
  const dir = join(tmpdir(), `bench-indexer-${format}-${waczCount}x${records}`);
  const manifestPath = join(dir, "manifest.json");
  const generateSeconds = await generate(dir, format);
  const resources = (JSON.parse(readFileSync(manifestPath, "utf8")) as { resources: Resource[] }).resources;
  const commands = await writeFloorCommands(dir, resources);
  try {
    for (let run = 1; run <= runs; run++) {
      // The floor and the import each get a fresh server, one after the other, so neither is measured
      // on the other's memory.
      const floor = await withServer(join(dir, "redis-floor"), async (server, redis) => {
        const cpuBefore = await redisCpuSeconds(redis);
        const { seconds, cliCpuSeconds } = await floorRun(server.port, commands);
        const lines = await redis.hlen("allhashes");
        return { seconds, cliCpuSeconds, redisCpuSeconds: (await redisCpuSeconds(redis)) - cpuBefore, lines, commands: await commandUsPerLine(redis, lines) };
      });
      const profileDir = values.cpuProf ? join(values.cpuProf, `${format}-${run}`) : undefined;
      if (profileDir) rmSync(profileDir, { recursive: true, force: true });
      await withServer(join(dir, "redis"), async (server, redis) => {
        const cpuBefore = await redisCpuSeconds(redis);
        const imported = await importRun(server.url, manifestPath, profileDir);
        const importRedisCpu = (await redisCpuSeconds(redis)) - cpuBefore;
        const lines = Number(await redis.hget("allcounts", "totalUrls"));
        const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);
        const linesPerSecond = Math.round(lines / imported.seconds);
        const floorLinesPerSecond = Math.round(floor.lines / floor.seconds);
        console.log(JSON.stringify({
          benchmark: "indexer",
          format,
          run,
          exitCode: imported.code,
          waczFiles: waczCount,
          recordsPerWacz: records,
          cdxLines: lines,
          hashes: await redis.hlen("allhashes"),
          seconds: Math.round(imported.seconds * 100) / 100,
          linesPerSecond,
          floorLinesPerSecond,
          share: Math.round((linesPerSecond / floorLinesPerSecond) * 100) / 100,
          importerPeakRssMB: Math.round(imported.peakKb / 102.4) / 10,
          // CPU per CDX line, in microseconds: the importer and its Redis, redis-cli and its Redis.
          importerCpuUsPerLine: perLine(imported.cpuSeconds, lines),
          importRedisCpuUsPerLine: perLine(importRedisCpu, lines),
          floorCliCpuUsPerLine: perLine(floor.cliCpuSeconds, floor.lines),
          floorRedisCpuUsPerLine: perLine(floor.redisCpuSeconds, floor.lines),
          // The share when CPU is what limits (a loaded machine): floor CPU over import CPU, per line.
          importRedisCommandUsPerLine: await commandUsPerLine(redis, lines),
          floorRedisCommandUsPerLine: floor.commands,
          cpuShare: Math.round(((floor.cliCpuSeconds + floor.redisCpuSeconds) / floor.lines / ((imported.cpuSeconds + importRedisCpu) / lines)) * 100) / 100,
          // Local files are read whole only for their sha256 when a manifest gives none; this one gives them.
          waczBytesTotal: resources.reduce((sum, r) => sum + r.size, 0),
          redisUsedMemoryMB: Math.round(usedMemory / 1e5) / 10,
          generateSeconds: Math.round(generateSeconds * 10) / 10,
          ...(profileDir ? { profileTop: topSelfTime(profileDir, 12) } : {}),
        }));
      });
    }
  } finally {
    if (!values.keep) rmSync(dir, { recursive: true, force: true });
  }
}
