/**
 * Crawl benchmark: crawls a generated loopback site and prints JSON with pages, seconds, pages per
 * second, WARC bytes and the crawler process's peak RSS.
 *   node dist/bench/crawl.js [--pages 200] [--workers 2]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startGeneratedSite } from "./lib/generatedSite.js";

const { values } = parseArgs({
  options: { pages: { type: "string", default: "200" }, workers: { type: "string", default: "2" } },
});
const pages = Number(values.pages);
const workers = Number(values.workers);
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
const started = process.hrtime.bigint();
const child = spawn(process.execPath, [crawlEntry, "--url", `${site.url}/page/0.html`, "--collection", "bench",
  "--cwd", cwd, "--workers", String(workers), "--logLevel", "warn", "--netIdleWait", "2"], { stdio: ["ignore", "ignore", "inherit"] });
let peakKb = 0;
const sampler = setInterval(() => (peakKb = Math.max(peakKb, peakRssKb(child.pid!))), 200);
const code: number = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? -1)));
clearInterval(sampler);
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const archive = join(cwd, "collections", "bench", "archive");
const warcBytes = readdirSync(archive).reduce((sum, f) => sum + statSync(join(archive, f)).size, 0);
await site.close();
rmSync(cwd, { recursive: true, force: true });
console.log(JSON.stringify({
  benchmark: "crawl",
  exitCode: code,
  pages,
  workers,
  seconds: Math.round(seconds * 100) / 100,
  pagesPerSecond: Math.round((pages / seconds) * 100) / 100,
  warcBytes,
  peakRssMB: Math.round(peakKb / 102.4) / 10,
}));
