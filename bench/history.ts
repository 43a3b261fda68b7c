/**
 * Capture-history benchmark: how much dedupe-Redis memory the history (u:<crawlId>: one entry per URL
 * captured), the outlinks (o:<crawlId>: one entry per page) and allurls (one entry per URL, once the
 * crawl is committed) take, written through CaptureHistory as the crawl writes them. Pages carry their
 * response headers (for --refresh's replayable 304 revisits); other resources do not. Prints JSON.
 *   node dist/bench/history.js [--pages 20000] [--resourcesPerPage 5] [--linksPerPage 50]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { CaptureHistory, mergeCrawlUrls } from "../src/dedupe/captureHistory.js";
import { dedupeKeys, type CaptureRecord } from "../src/dedupe/indexKeys.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";

const { values } = parseArgs({
  options: { pages: { type: "string", default: "20000" }, resourcesPerPage: { type: "string", default: "5" }, linksPerPage: { type: "string", default: "50" } },
});
const pages = Number(values.pages);
const resourcesPerPage = Number(values.resourcesPerPage);
const linksPerPage = Number(values.linksPerPage);

const pageUrl = (i: number) => `https://www.example.com/news/2026/11/${i}/an-article-title-of-usual-length.html`;
const digest = (i: number) => `sha256:${i.toString(16).padStart(64, "0")}`;
const pageHeaders: [string, string][] = [
  ["content-type", "text/html; charset=utf-8"], ["cache-control", "max-age=600"], ["date", "Wed, 25 Nov 2026 08:00:00 GMT"],
  ["etag", '"5f2a-61c0d3b1e2f40"'], ["last-modified", "Tue, 24 Nov 2026 17:12:09 GMT"], ["server", "nginx"], ["vary", "Accept-Encoding"],
  ["content-encoding", "gzip"], ["x-frame-options", "SAMEORIGIN"], ["strict-transport-security", "max-age=31536000"],
];

const dir = mkdtempSync(join(tmpdir(), "bench-history-"));
const server = new EmbeddedRedis({ dataDir: dir, persist: false });
const redis = new Redis(await server.start());
try {
  const history = new CaptureHistory(redis, "bench");
  const started = performance.now();
  for (let start = 0; start < pages; start += 500) {
    const writes: Promise<void>[] = [];
    for (let i = start; i < Math.min(start + 500, pages); i++) {
      const page: CaptureRecord = { date: "20261125080000123", status: 200, digest: digest(i), waczIndex: 0, etag: '"5f2a-61c0d3b1e2f40"', statusText: "OK", headers: pageHeaders };
      writes.push(history.recordCapture(pageUrl(i), page));
      for (let r = 0; r < resourcesPerPage; r++) {
        writes.push(history.recordCapture(`https://cdn.example.com/assets/${i}/image-${r}.jpg?w=800`, { date: "20261125080000456", status: 200, digest: digest(pages + i * resourcesPerPage + r), waczIndex: 0 }));
      }
      writes.push(history.recordOutlinks(pageUrl(i), Array.from({ length: linksPerPage }, (_, l) => pageUrl((i * 31 + l) % (pages * 10)))));
    }
    await Promise.all(writes);
  }
  const writeSeconds = (performance.now() - started) / 1000;
  await mergeCrawlUrls(redis, "bench");
  const bytes = async (key: string) => Number(await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
  const [captures, outlinks, allUrls] = await Promise.all([bytes(dedupeKeys.crawlCaptures("bench")), bytes(dedupeKeys.crawlOutlinks("bench")), bytes(dedupeKeys.allUrls)]);
  const urls = pages * (1 + resourcesPerPage);
  console.log(JSON.stringify({
    benchmark: "history",
    pages,
    urlsCaptured: urls,
    linksPerPage,
    writeSeconds: round(writeSeconds),
    historyMB: round(captures / 1e6),
    historyBytesPerPageEntry: Math.round((captures / urls) * 1), // averaged over pages and resources
    outlinksMB: round(outlinks / 1e6),
    outlinksBytesPerPage: Math.round(outlinks / pages),
    allurlsMB: round(allUrls / 1e6),
    allurlsBytesPerUrl: Math.round(allUrls / urls),
    totalBytesPerPage: Math.round((captures + outlinks + allUrls) / pages),
  }));
} finally {
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
