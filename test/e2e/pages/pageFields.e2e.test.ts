// What browsertrix-crawler writes per page beyond the basics, in a packaged crawl of the page-fields site
// (fixtures/pageFieldsSite.ts): each pages.jsonl line's loadState (how far the page got: behaviors finished,
// cut by their timeout, off; a PDF only loaded) and favIconUrl (the icon the browser showed, archived too),
// the page documents' WARC-Identified-Payload-Type (the type and charset the browser took them for), and the
// __bx_addLinkBatch binding (its URLs queued as __bx_addLink's are, within the seed's scope).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_BEHAVIOR, FAVICON, SLOW_BEHAVIOR, startPageFieldsSite, type PageFieldsSite } from "../../../fixtures/pageFieldsSite.js";
import { NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

let site: PageFieldsSite;
let cwd: string;

interface Packaged {
  result: CliResult;
  /** pages/pages.jsonl and pages/extraPages.jsonl of the WACZ, header first. */
  lists: Record<string, Record<string, unknown>[]>;
  records: RawRecord[];
}

/** The WACZ's pages lists and the records of its own WARC files. */
async function packaged(name: string, result: CliResult): Promise<Packaged> {
  if (result.code !== 0) throw new Error(`crawl ${name} exited ${result.code}: ${result.stderr.slice(-3000)}`);
  const wacz = await readZip(join(cwd, "collections", name, `${name}.wacz`));
  const lines = (file: string) => (wacz.get(file)?.data.toString().trim().split("\n") ?? []).map((l) => JSON.parse(l) as Record<string, unknown>);
  const records = [...wacz.keys()].filter((entry) => entry.startsWith("archive/")).flatMap((entry) => {
    const copy = join(cwd, `${name}-${entry.replace("/", "-")}`);
    writeFileSync(copy, wacz.get(entry)?.data ?? Buffer.alloc(0));
    return readWarcRecords(copy);
  });
  return { result, lists: { pages: lines("pages/pages.jsonl"), extraPages: lines("pages/extraPages.jsonl") }, records };
}

/** A pages line without what differs from run to run (id, ts), which must be there all the same. */
function stable(line: Record<string, unknown>): Record<string, unknown> {
  expect(line.id).toMatch(/^[0-9a-f-]{36}$/);
  expect(Number.isNaN(Date.parse(String(line.ts)))).toBe(false);
  const { id: _id, ts: _ts, ...rest } = line;
  return rest;
}

let withBehaviors: Promise<Packaged>;
let withoutBehaviors: Promise<Packaged>;

beforeAll(async () => {
  site = await startPageFieldsSite();
  cwd = mkdtempSync(join(tmpdir(), "page-fields-"));
  const batchBehavior = join(cwd, "batch.js");
  const slowBehavior = join(cwd, "slow.js");
  writeFileSync(batchBehavior, BATCH_BEHAVIOR);
  writeFileSync(slowBehavior, SLOW_BEHAVIOR);
  const crawl = (name: string, args: string[]) =>
    runCli("crawl", ["--collection", name, "--cwd", cwd, "--generateWACZ", "--workers", "2", "--netIdleWait", "1", ...args], { timeoutMs: 170_000 }).then((result) => packaged(name, result));
  // Default behaviors (siteSpecific runs the custom ones); the slow page's behavior is cut after 4 s.
  withBehaviors = crawl("on", ["--url", `${site.url}/pf/`, "--scopeType", "prefix", "--customBehaviors", batchBehavior, "--customBehaviors", slowBehavior, "--behaviorTimeout", "4"]);
  withoutBehaviors = crawl("off", ["--url", `${site.url}/pf/`, "--url", `${site.url}/pf/plain.html`, "--scopeType", "page", ...NO_BEHAVIORS]);
  await Promise.all([withBehaviors, withoutBehaviors]);
}, 180_000);

afterAll(async () => {
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("pages.jsonl fields", () => {
  it("lists each page with browsertrix-crawler's fields: loadState 4 where behaviors finished, 3 where they timed out, 2 for a PDF; favIconUrl where the browser had an icon", async () => {
    const { result, lists } = await withBehaviors;
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const url = (path: string) => site.url + path;
    expect(lists.pages[0]).toEqual({ format: "json-pages-1.0", id: "pages", title: "All Pages" });
    expect(lists.pages.slice(1).map(stable)).toEqual([
      { url: url("/pf/"), title: "Page fields", loadState: 4, status: 200, mime: "text/html", depth: 0, seed: true, favIconUrl: url("/pf/fav.png") },
    ]);
    const html = (path: string, title: string, loadState: number, depth = 1) => ({ url: url(path), title, loadState, status: 200, mime: "text/html", depth, seed: false });
    const byUrl = (a: Record<string, unknown>, b: Record<string, unknown>) => String(a.url).localeCompare(String(b.url));
    expect(lists.extraPages[0]).toEqual({ format: "json-pages-1.0", id: "extra-pages", title: "Extra Pages" });
    expect(lists.extraPages.slice(1).map(stable).sort(byUrl)).toEqual([
      html("/pf/batch-a.html", "Batch A", 4, 2),
      html("/pf/batch-b.html", "Batch B", 4, 2),
      html("/pf/batch-c.html", "Batch C", 4, 2),
      html("/pf/batch.html", "Batch", 4),
      { url: url("/pf/doc.pdf"), title: "", loadState: 2, status: 200, mime: "application/pdf", depth: 1, seed: false },
      html("/pf/latin1.html", "Latin-1", 4),
      html("/pf/plain.html", "Plain", 4),
      html("/pf/slow.html", "Slow", 3),
    ].sort(byUrl));
  });

  it("favIconUrl names the icon the archive holds; the /favicon.ico the browser probed for and did not find is neither listed nor archived", async () => {
    const { lists, records } = await withBehaviors;
    const icon = lists.pages[1]?.favIconUrl;
    expect(icon).toBe(`${site.url}/pf/fav.png`);
    const responses = records.filter((r) => r.headers.get("warc-type") === "response");
    const icons = responses.filter((r) => r.headers.get("warc-target-uri") === icon);
    expect(icons).toHaveLength(1);
    expect(icons[0].payload.equals(FAVICON)).toBe(true);
    expect(site.hits).toContain("/favicon.ico");
    expect(responses.filter((r) => r.headers.get("warc-target-uri") === `${site.url}/favicon.ico`)).toEqual([]);
  });

  it("with behaviors off, a read page is loadState 3", async () => {
    const { result, lists } = await withoutBehaviors;
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(lists.pages.slice(1).map(stable).sort((a, b) => String(a.url).localeCompare(String(b.url)))).toEqual([
      { url: `${site.url}/pf/`, title: "Page fields", loadState: 3, status: 200, mime: "text/html", depth: 0, seed: true, favIconUrl: `${site.url}/pf/fav.png` },
      { url: `${site.url}/pf/plain.html`, title: "Plain", loadState: 3, status: 200, mime: "text/html", depth: 0, seed: true },
    ]);
  });
});

describe("WARC-Identified-Payload-Type", () => {
  it("is on each rendered page document's response record: the type and charset the browser took it for; on nothing else", async () => {
    const { records } = await withBehaviors;
    const identified = Object.fromEntries(
      records
        .filter((r) => r.headers.get("warc-type") === "response" && r.headers.has("warc-identified-payload-type"))
        .map((r) => [new URL(r.headers.get("warc-target-uri") ?? "").pathname, r.headers.get("warc-identified-payload-type")]),
    );
    const utf8 = 'text/html; charset="UTF-8"';
    expect(identified).toEqual({
      "/pf/": utf8,
      "/pf/plain.html": utf8,
      // Sent as text/html with no charset: the encoding is the browser's own.
      "/pf/latin1.html": 'text/html; charset="windows-1252"',
      "/pf/batch.html": utf8,
      "/pf/slow.html": utf8,
      "/pf/batch-a.html": utf8,
      "/pf/batch-b.html": utf8,
      "/pf/batch-c.html": utf8,
    });
  });
});

describe("__bx_addLinkBatch", () => {
  it("queues exactly the batch's URLs in the seed's scope (both forms: blank-line-joined string, array), and not the one outside it", async () => {
    const { result } = await withBehaviors;
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    // No page links the batch pages: only the binding queued them. The out-of-scope one was never fetched.
    for (const path of ["/pf/batch-a.html", "/pf/batch-b.html", "/pf/batch-c.html"]) expect(site.hits).toContain(path);
    expect(site.hits).not.toContain("/outside/batch-x.html");
  });
});
