/**
 * Links people expect besides a[href] (browsertrix-crawler #702, #967): the URLs GET forms submit with their
 * default values (and each option of their selects), and the RSS, Atom and JSON feeds a page names with the
 * pages they list; each within the scope, each turned off by its flag (--no-extractFormLinks, or
 * extractFeedLinks: false in --config).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { startLinkDiscoverySite, type LinkDiscoverySite } from "../../helpers/linkDiscoverySite.js";
import { listedPaths } from "../../helpers/pageLists.js";

let site: LinkDiscoverySite;
let cwd: string;

beforeAll(async () => {
  site = await startLinkDiscoverySite();
  cwd = mkdtempSync(join(tmpdir(), "link-discovery-e2e-"));
});
afterAll(async () => {
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

/** The pages of the crawl of /site/ (prefix scope), as path and query, sorted. */
async function crawledPages(collection: string, args: string[]): Promise<string[]> {
  const result = await runCli("crawl", [
    "--url", `${site.url}/site/`, "--scopeType", "prefix", "--collection", collection, "--cwd", cwd, "--netIdleWait", "1", ...NO_BEHAVIORS, ...args,
  ], { timeoutMs: 240_000 });
  expect(result.code, result.stderr.slice(-3000)).toBe(0);
  return listedPaths(join(cwd, "collections", collection), (u) => u.pathname + u.search);
}

const LINKED = ["/site/", "/site/feeds.html", "/site/forms.html"];
const FORMS = [
  // The search form: text, checked box, selected option, hidden field; not the unchecked box, the file,
  // the disabled field nor the button (no submitter); the action's own query is replaced.
  "/site/search?q=cats+and+dogs&safe=on&sort=date&lang=en",
  // ...and with the select's other (enabled) option.
  "/site/search?q=cats+and+dogs&safe=on&sort=relevance&lang=en",
  // A select menu form without an action: the page's own URL, once per option.
  "/site/forms.html?page=a",
  "/site/forms.html?page=b",
];
const FEEDS = [
  "/site/feed.atom", "/site/feed.json", "/site/feed.rss", "/site/feed.xml",
  // Items: RSS <link> and permalink <guid>, Atom alternate links (with rel or without), JSON Feed url,
  // RSS sent as text/xml; never an Atom enclosure, a guid that is no permalink, or an out-of-scope item.
  "/site/from-atom", "/site/from-atom-bare", "/site/from-json", "/site/from-rss", "/site/from-rss-guid", "/site/from-xml",
];

describe.concurrent("links of GET forms and feeds", () => {
  it("by default: GET forms' URLs (not POST, password or javascript: forms; out of scope not) and the feeds and their in-scope items", async () => {
    expect(await crawledPages("both", [])).toEqual([...LINKED, ...FORMS, ...FEEDS].sort());
  }, 250_000);

  it("--no-extractFormLinks: no form URLs, the feeds still", async () => {
    expect(await crawledPages("noforms", ["--no-extractFormLinks"])).toEqual([...LINKED, ...FEEDS].sort());
  }, 250_000);

  it("extractFeedLinks: false in --config: no feeds nor their items, the forms' URLs still", async () => {
    const config = join(cwd, "nofeeds.yaml");
    writeFileSync(config, "extractFeedLinks: false\n");
    expect(await crawledPages("nofeeds", ["--config", config])).toEqual([...LINKED, ...FORMS].sort());
  }, 250_000);
});
