/**
 * Pages that never stop fetching (fixtures/dynamicSite.ts: three pages polling every 200 ms, a ticker, a page
 * opening a request every 100 ms, one re-downloading an image, a long poll), crawled on the defaults with
 * --workers 2: the crawl's seconds, each page's time in its worker and what its end cut off (the debug line
 * "page timings"), whether any page was retried, and the requests that reached the site after the crawl ended.
 *   node dist/bench/dynamicPages.js [--behaviors ""]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startDynamicSite } from "../fixtures/dynamicSite.js";
import { PAGE_TIMINGS_MESSAGE } from "../src/page/pageTimings.js";

const { values } = parseArgs({ options: { behaviors: { type: "string" }, workers: { type: "string", default: "2" } } });
const crawlEntry = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));

const site = await startDynamicSite();
const cwd = mkdtempSync(join(tmpdir(), "bench-dynamic-"));
const args = ["--url", `${site.url}/`, "--scopeType", "prefix", "--workers", values.workers!, "--collection", "dyn", "--cwd", cwd, "--logLevel", "debug"];
if (values.behaviors !== undefined) args.push("--behaviors", values.behaviors);
const started = Date.now();
const { code, log } = await new Promise<{ code: number | null; log: string }>((resolve, reject) => {
  const child = spawn(process.execPath, [crawlEntry, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.on("data", (d: Buffer) => (log += d.toString()));
  child.on("error", reject);
  child.on("close", (exit) => resolve({ code: exit, log }));
});
const seconds = (Date.now() - started) / 1000;
const seenAtEnd = site.requests.length;
await new Promise((resolve) => setTimeout(resolve, 2000));

interface Line { message: string; details?: { url?: string; ms?: { total?: number; behaviors?: number; drain?: number }; cutAtEnd?: unknown } }
const lines = log.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Line);
const pages = lines.filter((l) => l.message === PAGE_TIMINGS_MESSAGE).map((l) => ({
  path: new URL(l.details!.url!).pathname,
  seconds: (l.details!.ms!.total ?? 0) / 1000,
  behaviorsSeconds: (l.details!.ms!.behaviors ?? 0) / 1000,
  drainSeconds: (l.details!.ms!.drain ?? 0) / 1000,
  cutAtEnd: l.details!.cutAtEnd,
  ms: l.details!.ms,
}));
const documentRequests = (path: string) => site.requests.filter((r) => r.path === path).length;
console.log(JSON.stringify({
  benchmark: "dynamicPages",
  behaviors: values.behaviors ?? "(default)",
  exitCode: code,
  seconds,
  pages: pages.sort((a, b) => a.path.localeCompare(b.path)),
  retriedPages: pages.filter((p) => documentRequests(p.path) > 1).map((p) => p.path),
  requestsAfterCrawlEnded: site.requests.length - seenAtEnd,
}, null, 2));
await site.close();
rmSync(cwd, { recursive: true, force: true });
