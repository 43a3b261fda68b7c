import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { runCli } from "../../helpers/cli.js";

let site: FixtureServer;
let cwd: string;
beforeAll(async () => {
  site = await startFixtureServer();
  cwd = mkdtempSync(join(tmpdir(), "crawl-config-e2e-"));
});
afterAll(async () => {
  await site?.close();
  rmSync(cwd, { recursive: true, force: true });
});

function pagePaths(collection: string): string[] {
  return ["pages.jsonl", "extraPages.jsonl"]
    .flatMap((f) => readFileSync(join(cwd, "collections", collection, "pages", f), "utf8").trim().split("\n").slice(1))
    .map((l) => new URL((JSON.parse(l) as { url: string }).url))
    .map((u) => u.pathname + u.search)
    .sort();
}

describe("crawl --config", () => {
  it("crawls each config seed within its own scope; the flags' scope applies to plain seeds", async () => {
    // The flags' scope (prefix /site/, unlimited depth) would take the whole fixture site from any of these seeds.
    const config = join(cwd, "seeds.yaml");
    writeFileSync(config, [
      "seeds:",
      `  - url: ${site.url}/site/gallery.html`,
      "    scopeType: page",
      `  - url: ${site.url}/site/about.html`,
      "    depth: 1",
      "    exclude: [search]",
      `  - ${site.url}/site/docs/report.pdf`,
      "scopeType: prefix",
      "workers: 2",
      "generateWACZ: false",
      "",
    ].join("\n"));
    const stats = join(cwd, "seeds-stats.json");
    const result = await runCli("crawl", ["--config", config, "--cwd", cwd, "--collection", "seeds", "--statsFilename", stats]);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    // gallery: itself only (not its links to contact and index); about: itself and the index and
    // products pages one link away, not the excluded search page; the PDF (a plain seed) links nowhere.
    expect(pagePaths("seeds")).toEqual(["/site/about.html", "/site/docs/report.pdf", "/site/gallery.html", "/site/index.html", "/site/products.html"]);
    expect(JSON.parse(readFileSync(stats, "utf8"))).toMatchObject({ crawled: 5, failed: 0, queued: 0, status: "done" });
    expect(site.requests.some((r) => r.url.startsWith("/site/search.html") || r.url.startsWith("/site/contact.html") || r.url.startsWith("/site/caf"))).toBe(false);
  }, 240_000);

  it.each([
    ["pageLoadTimout: 30\n", /^crawl: --config \S+: unknown key "pageLoadTimout" \(did you mean "pageLoadTimeout"\?\)$/],
    ["seeds: [http://127.0.0.1/\n", /^crawl: --config \S+ line 2: not valid YAML: /],
  ])("a bad config %j exits 4 with one line", async (text, message) => {
    const config = join(cwd, "bad.yaml");
    writeFileSync(config, text);
    const result = await runCli("crawl", ["--config", config, "--cwd", cwd]);
    expect(result.code).toBe(4);
    expect(result.stderr.trimEnd()).toMatch(message);
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  });

  it("a missing config file exits 4 with one line", async () => {
    const result = await runCli("crawl", ["--config", join(cwd, "missing.yaml")]);
    expect(result.code).toBe(4);
    expect(result.stderr).toBe(`crawl: --config ${join(cwd, "missing.yaml")}: no such file\n`);
  });
});
