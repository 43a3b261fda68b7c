import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserResources, startTemplateSite, TEMPLATE_SITE_PAGES, type TemplateSite } from "../../../fixtures/templateSite.js";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// The template site's expectations (fixtures/templateSite.ts) checked against a browser-mode crawl on the
// defaults (behaviors on): what hybrid capture's tests and bench compare their archives with.
let site: TemplateSite;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];

const pathOf = (url: string) => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};

beforeAll(async () => {
  site = await startTemplateSite();
  cwd = mkdtempSync(join(tmpdir(), "crawl-template-site-"));
  crawl = await runCli("crawl", ["--url", site.url + TEMPLATE_SITE_PAGES[0], "--collection", "templates", "--cwd", cwd, "--workers", "2"], { timeoutMs: 170_000 });
  const archive = join(cwd, "collections", "templates", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 180_000);

afterAll(async () => {
  await site?.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe("the template site crawled in a browser", () => {
  it("crawls every page the hub links", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    expect(listedPaths(join(cwd, "collections", "templates"), (u) => u.pathname + u.search)).toEqual([...TEMPLATE_SITE_PAGES].sort());
  });

  it("stores exactly the union of every page's browserResources, each answered 200", () => {
    const expected = [...new Set(TEMPLATE_SITE_PAGES.flatMap((p) => browserResources(p)))].sort();
    const responses = records.filter((r) => r.headers.get("warc-type") === "response");
    expect([...new Set(responses.map((r) => pathOf(r.headers.get("warc-target-uri")!)))].sort()).toEqual(expected);
    expect(responses.filter((r) => httpStatus(r) !== 200).map((r) => r.headers.get("warc-target-uri"))).toEqual([]);
  });

  it("was asked for nothing else (no /favicon.ico, no 404)", () => {
    const expected = new Set(TEMPLATE_SITE_PAGES.flatMap((p) => browserResources(p)));
    expect([...new Set(site.requests.filter((r) => !expected.has(r)))]).toEqual([]);
  });

  it("has each page's own script-made resources (derived from its path) and each feed's scrolled batches", () => {
    const stored = new Set(records.filter((r) => r.headers.get("warc-type") === "response").map((r) => pathOf(r.headers.get("warc-target-uri")!)));
    for (const path of ["/api/articles/a7.json", "/img/thumbs/a7.png", "/api/special-extra.json", "/api/reviews/p3.json", "/api/feed/f2?page=3", "/img/feed/f2-3.png", "/img/d4-2x.png"]) {
      expect(stored.has(path), path).toBe(true);
    }
    expect(stored.has("/api/reviews/p1.json")).toBe(false);
  });
});
