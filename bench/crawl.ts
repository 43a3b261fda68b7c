/**
 * Crawl benchmark: crawls a generated loopback site and prints JSON with pages, seconds, pages per
 * second, WARC bytes and the crawler processes' peak RSS. With --processes K, K crawler processes share
 * the crawl through one (private) redis-server.
 *   node dist/bench/crawl.js [--pages 200] [--workers 2] [--processes 1]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startGeneratedSite } from "./lib/generatedSite.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";

const { values } = parseArgs({
  options: { pages: { type: "string", default: "200" }, workers: { type: "string", default: "2" }, processes: { type: "string", default: "1" } },
});
const pages = Number(values.pages);
const workers = Number(values.workers);
const processes = Number(values.processes);
const crawlEntry = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));

function peakRssKb(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

const site = await startGeneratedSite(pages);
const cwd = mkdtempSync(join(tmpdir(), "bench-crawl-"));
const redis = new EmbeddedRedis({ dataDir: join(cwd, "redis"), persist: false });
const redisUrl = await redis.start();
const started = process.hrtime.bigint();
const children = Array.from({ length: processes }, () =>
  spawn(process.execPath, [crawlEntry, "--url", `${site.url}/page/0.html`, "--collection", "bench", "--crawlId", "bench",
    "--cwd", cwd, "--workers", String(workers), "--logLevel", "warn", "--netIdleWait", "2", "--redisStoreUrl", redisUrl],
    { stdio: ["ignore", "ignore", "inherit"] }),
);
const peaks = children.map(() => 0);
const sampler = setInterval(() => children.forEach((c, i) => (peaks[i] = Math.max(peaks[i], peakRssKb(c.pid!)))), 200);
const codes: number[] = await Promise.all(children.map((c) => new Promise<number>((resolve) => c.on("exit", (code) => resolve(code ?? -1)))));
clearInterval(sampler);
await redis.stop();
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const archive = join(cwd, "collections", "bench", "archive");
const warcBytes = readdirSync(archive).reduce((sum, f) => sum + statSync(join(archive, f)).size, 0);
await site.close();
rmSync(cwd, { recursive: true, force: true });
console.log(JSON.stringify({
  benchmark: "crawl",
  exitCodes: codes,
  pages,
  processes,
  workersPerProcess: workers,
  seconds: Math.round(seconds * 100) / 100,
  pagesPerSecond: Math.round((pages / seconds) * 100) / 100,
  warcBytes,
  peakRssMBPerProcess: peaks.map((kb) => Math.round(kb / 102.4) / 10),
}));
