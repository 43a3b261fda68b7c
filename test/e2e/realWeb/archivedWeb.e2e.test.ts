import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startArchivedWeb } from "../../../fixtures/archivedWeb/index.js";
import { NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { listedPages } from "../../helpers/pageLists.js";
import { startTestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

// Real pages nobody here wrote, served back from other crawlers' archives by fixtures/archivedWeb (a forward
// proxy on loopback with a CA of its own), crawled one page each through it: the crawl must succeed and
// store every subresource the page's HTML references that the archive holds.

const REAL_WEB = join(import.meta.dirname, "../../../fixtures/real-web");
const ARCHIVES = ["books.toscrape.com.warc", "webrecorder.net.wacz", "en.wikipedia.org-Mona_Lisa-2013.warc.gz"];

let cwd: string;
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-archived-web-"));
});
afterAll(() => {
  rmSync(cwd, { recursive: true, force: true });
});

function normalized(url: string): string {
  const parsed = new URL(url);
  parsed.hash = "";
  return parsed.href;
}

// Each test serves and crawls an archive of its own into a collection of its own, with a Redis of its own.
describe.concurrent("a real page served from its archive", () => {
  for (const archive of ARCHIVES) {
    it(`${archive}: the page is crawled with every archived subresource its HTML references`, async () => {
      const web = await startArchivedWeb([join(REAL_WEB, archive)]);
      const redis = await startTestRedis();
      try {
        const page = web.urls()[0];
        const collection = archive.replace(/\W+/g, "-");
        const result = await runCli("crawl", [
          "--url", page, "--scopeType", "page", "--collection", collection, "--cwd", cwd, "--workers", "1",
          "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, ...NO_BEHAVIORS, ...web.crawlFlags,
        ], { env: web.crawlEnv });
        expect(result.code, result.stderr.slice(-3000)).toBe(0);

        const dir = join(cwd, "collections", collection);
        // An http:// page on an HSTS-preloaded host (wikipedia.org) is loaded as https://: the crawler lists the
        // seed and the https:// page it became.
        const listed = listedPages(dir).map((p) => p.url);
        expect(listed).toContain(page);
        expect(listed.filter((url) => url !== page && url !== page.replace(/^http:/, "https:"))).toEqual([]);
        const archiveDir = join(dir, "archive");
        const stored = new Set(
          readdirSync(archiveDir)
            .flatMap((f) => readWarcRecords(join(archiveDir, f)))
            .filter((r) => r.headers.get("warc-type") === "response" || r.headers.get("warc-type") === "revisit")
            .map((r) => normalized(r.headers.get("warc-target-uri")!)),
        );
        // An http:// reference to a host on Chromium's HSTS preload list (wikipedia.org, wikimedia.org) is
        // requested, and stored, as https://: the proxy answers it from the http:// capture.
        const storedAs = (url: string): string =>
          stored.has(url) || !url.startsWith("http:") ? url : `https:${url.slice("http:".length)}`;
        const expected = web.archivedSubresourcesOf(page).map(normalized);
        expect(expected.length).toBeGreaterThan(0);
        const missing = expected.filter((url) => !stored.has(storedAs(url)));
        expect(missing).toEqual([]);
      } finally {
        await redis.stop();
        await web.close();
      }
    });
  }
});
