/**
 * Sitemap benchmark: a loopback site whose sitemap index lists K gzipped sitemaps of 50,000 URLs each
 * (the protocol's maximum); --useSitemap's reader queues them all into a crawl-state Redis. Prints JSON
 * with seconds, URLs per second and the heap before, at a tenth and after: the heap must not grow with
 * the number of URLs (entries are streamed into the queue, never held as one list).
 *   node --expose-gc dist/bench/sitemap.js [--sitemaps 4]
 */
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { Redis } from "ioredis";
import { PageAdmission } from "../src/scope/admission.js";
import { SeedScope } from "../src/scope/seedScope.js";
import { StopControl } from "../src/crawl/stopControl.js";
import { logger } from "../src/log/logger.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { RobotsTxt } from "../src/robots/robotsTxt.js";
import { rulesOutsideACrawl } from "../src/fetch/connectionRules.js";
import { startSitemapReading } from "../src/sitemap/sitemapSeeds.js";
import { Frontier } from "../src/frontier/frontier.js";
import { Membership } from "../src/state/membership/membership.js";
import { SitemapClaim } from "../src/state/sitemapClaim.js";

const { values } = parseArgs({ options: { sitemaps: { type: "string", default: "4" } } });
const sitemaps = Number(values.sitemaps);
const PER_SITEMAP = 50_000;
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const heapMb = () => (gc(), Math.round(process.memoryUsage().heapUsed / 1e5) / 10);
logger.setLevel("warn");

let origin = "";
const children = new Map<string, Buffer>();
const server = createServer((req, res) => {
  const path = req.url ?? "/";
  if (path === "/robots.txt") return void res.writeHead(200, { "content-type": "text/plain" }).end(`Sitemap: ${origin}/index.xml\n`);
  if (path === "/index.xml") {
    const items = Array.from({ length: sitemaps }, (_, i) => `<sitemap><loc>${origin}/s-${i}.xml.gz</loc></sitemap>`).join("");
    return void res.writeHead(200, { "content-type": "application/xml" }).end(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${items}</sitemapindex>`);
  }
  const body = children.get(path);
  if (body) return void res.writeHead(200, { "content-type": "application/gzip" }).end(body);
  res.writeHead(404).end();
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
for (let s = 0; s < sitemaps; s++) {
  const urls = Array.from({ length: PER_SITEMAP }, (_, i) => `<url><loc>${origin}/site/s${s}/page-${i}.html</loc><lastmod>2024-01-01</lastmod></url>`).join("\n");
  children.set(`/s-${s}.xml.gz`, gzipSync(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>`));
}

const dir = mkdtempSync(join(tmpdir(), "bench-sitemap-"));
const redisServer = new EmbeddedRedis({ dataDir: join(dir, "redis"), persist: false });
const redis = new Redis(await redisServer.start());
try {
  const membership = new Membership(redis, "bench", "bench-1-abcd");
  const state = new Frontier(redis, membership);
  await membership.heartbeat();
  const scope = new SeedScope(`${origin}/site/`, { scopeType: "prefix", include: [], exclude: [], depth: -1, extraHops: 0 });
  const rules = rulesOutsideACrawl();
  const robotsTxt = new RobotsTxt({ rules, userAgent: null, agent: "*" });
  const heapBefore = heapMb();
  let heapAtTenth = 0;
  const sampler = setInterval(() => {
    void state.counts().then((c) => {
      if (!heapAtTenth && c.seen >= (sitemaps * PER_SITEMAP) / 10) heapAtTenth = heapMb();
    });
  }, 50);
  const started = performance.now();
  const reading = await startSitemapReading({ url: null, fromDate: null, toDate: null }, {
    claim: new SitemapClaim(redis, membership), admission: new PageAdmission(state, rules.addresses, 0, null), scopes: [scope], robotsTxt, stop: new StopControl(), userAgent: null, rules,
  });
  await reading.finished;
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const queued = (await state.counts()).queued;
  console.log(JSON.stringify({
    sitemaps, urls: sitemaps * PER_SITEMAP, queued,
    seconds: Math.round(seconds * 100) / 100,
    urlsPerSecond: Math.round(queued / seconds),
    gzippedBytes: [...children.values()].reduce((n, b) => n + b.length, 0),
    heapMbBefore: heapBefore, heapMbAtTenthOfUrls: heapAtTenth, heapMbAfter: heapMb(),
  }));
} finally {
  redis.disconnect();
  await redisServer.stop();
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
