/**
 * Change-report memory benchmark: reports N pages (a refresh of a large crawl) through ChangeReport and
 * prints JSON with the heap before and after, the summary's size and the report file's size. The heap
 * must not grow with N: URLs go to the file, counts to the crawl-state Redis.
 *   node --expose-gc dist/bench/changeReport.js [--pages 200000]
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { CHANGE_KINDS, ChangeReport } from "../src/reports/changeReport.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";

const { values } = parseArgs({ options: { pages: { type: "string", default: "200000" } } });
const pages = Number(values.pages);
const dir = mkdtempSync(join(tmpdir(), "bench-change-report-"));
const server = new EmbeddedRedis({ dataDir: join(dir, "redis"), persist: false });
const redis = new Redis(await server.start());
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const heapMb = () => (gc(), Math.round(process.memoryUsage().heapUsed / 1e5) / 10);

try {
  const report = new ChangeReport(join(dir, "reports", "changes.jsonl"), redis, { kinds: "b:changes:main", counts: "b:changecounts:main" });
  const heapBefore = heapMb();
  const started = performance.now();
  let heapMid = 0;
  for (let i = 0; i < pages; i++) {
    const change = CHANGE_KINDS[i % 4];
    await report.add({ url: `http://site.test/section/${i % 997}/page-${i}.html`, change, status: 200, digest: `sha256:${i.toString(16).padStart(64, "0")}`, previous: null });
    if (i === Math.floor(pages / 10)) heapMid = heapMb();
  }
  const summary = await report.summary();
  const heapAfter = heapMb();
  console.log(JSON.stringify({
    pages,
    seconds: Math.round((performance.now() - started) / 10) / 100,
    heapMbBefore: heapBefore,
    heapMbAtTenthOfPages: heapMid,
    heapMbAfter: heapAfter,
    summaryBytes: JSON.stringify(summary).length,
    reportFileBytes: statSync(report.path).size,
    summary,
  }));
} finally {
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
