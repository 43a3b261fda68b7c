/**
 * Search forms on every page (--extractFormLinks, on by default) crawl no twin of every page: an mdBook
 * searchbar (no action, one empty field) gives no page, WordPress's search form one `/?s=` page for the
 * site, Sphinx's quick search one `search.html?q=...` page; WordPress's category dropdown (real values)
 * still gives its listings.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSearchFormSites, type SearchFormSiteName, type SearchFormSites } from "../../../fixtures/searchFormSites.js";
import { NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { listedPaths } from "../../helpers/pageLists.js";

let sites: SearchFormSites;
let cwd: string;

beforeAll(async () => {
  sites = await startSearchFormSites();
  cwd = mkdtempSync(join(tmpdir(), "search-forms-e2e-"));
});
afterAll(async () => {
  await sites?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("search forms on every page", () => {
  it("crawl each site's pages, one search page for WordPress and Sphinx, none for mdBook, and the category listings", async () => {
    const names: SearchFormSiteName[] = ["book", "blog", "docs"];
    const result = await runCli("crawl", [
      ...names.flatMap((name) => ["--url", sites.seed[name]]),
      "--collection", "search-forms", "--cwd", cwd, "--netIdleWait", "1", "--workers", "2", ...NO_BEHAVIORS,
    ], { timeoutMs: 240_000 });
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const siteOf = (url: URL): string => names.find((name) => sites.url[name] === url.origin) ?? url.origin;
    const crawled = listedPaths(join(cwd, "collections", "search-forms"), (u) => `${siteOf(u)} ${u.pathname}${u.search}`);
    expect(crawled).toEqual([
      "book /ch1.html", "book /ch2.html", "book /index.html", "book /sub/ch3.html",
      "blog /", "blog /2024/01/hello-world/", "blog /about/",
      // The search form, from the pages other than the root (the root's own is the root again), absolute or "/".
      "blog /?s=",
      // The category dropdown: each option a listing.
      "blog /?cat=-1", "blog /?cat=3",
      "docs /api/module.html", "docs /index.html", "docs /intro.html", "docs /search.html",
      // The quick search from every page, "search.html" and "../search.html" alike; not search.html's own form.
      "docs /search.html?q=&check_keywords=yes&area=default",
    ].sort());
  }, 250_000);
});
