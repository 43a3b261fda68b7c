/**
 * Refresh benchmark: a full crawl of a versioned loopback site, then a --refresh crawl of version 2
 * (80% of pages unchanged); prints JSON with bytes transferred and seconds for both and the ratio.
 *   node dist/bench/refresh.js [--pages 100]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { startVersionedSite } from "./lib/versionedSite.js";

const { values } = parseArgs({ options: { pages: { type: "string", default: "100" } } });
const pages = Number(values.pages);
const crawlEntry = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), "bench-refresh-"));
const redis = new EmbeddedRedis({ dataDir: join(cwd, "redis"), persist: false });
const redisUrl = await redis.start();
const site = await startVersionedSite({ pages, changedFraction: 0.2, deleted: 0, added: Math.round(pages * 0.05) });

async function crawl(collection: string, extra: string[]): Promise<{ seconds: number; bytes: number; requests: number; code: number }> {
  site.resetCounters();
  const started = performance.now();
  const child = spawn(process.execPath, [crawlEntry, "--url", `${site.url}/v/page/0.html`, "--collection", collection, "--cwd", cwd,
    "--redisDedupeUrl", redisUrl, "--workers", "2", "--netIdleWait", "1", "--logLevel", "warn", "--generateWACZ", ...extra], { stdio: ["ignore", "ignore", "inherit"] });
  const code: number = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? -1)));
  return { seconds: Math.round((performance.now() - started) / 10) / 100, bytes: site.bytesServed, requests: site.requests, code };
}

try {
  const full = await crawl("full", []);
  site.setVersion(2);
  const refresh = await crawl("refresh", ["--refresh"]);
  const fullV2 = await crawl("full-v2", []); // what a plain re-crawl of version 2 costs (history is not used)
  console.log(JSON.stringify({
    benchmark: "refresh",
    pages,
    unchangedFraction: Math.round((site.truth.unchanged.length / pages) * 100) / 100,
    fullCrawl: full,
    fullRecrawl: fullV2,
    refreshCrawl: refresh,
    refreshBytesRatio: Math.round((refresh.bytes / fullV2.bytes) * 1000) / 1000,
  }));
} finally {
  await site.close();
  await redis.stop();
  rmSync(cwd, { recursive: true, force: true });
}
