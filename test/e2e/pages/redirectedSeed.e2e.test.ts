// A seed that redirects (301, 302) to another URL in its scope, packaged (--generateWACZ): the seed is listed
// under the URL asked for and the URL it landed at (the one replay shows), in the collection's pages list and
// in the WACZ's alike; the redirect and the landed page are archived.
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback, type LoopbackListener } from "../../../fixtures/loopback.js";
import { NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { listedPages } from "../../helpers/pageLists.js";
import { httpStatus, readWarcRecords } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

/** Path -> where it redirects, with which status. */
const REDIRECTS: Record<string, [number, string]> = { "/old/": [301, "/landed/"], "/temp": [302, "/landed-temp/"] };
/** Path -> the pages it links to. */
const PAGES: Record<string, string[]> = { "/landed/": ["/landed/a.html"], "/landed-temp/": ["/landed-temp/b.html"], "/landed/a.html": [], "/landed-temp/b.html": [] };

let site: LoopbackListener;
let cwd: string;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "redirected-seed-"));
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    const redirect = REDIRECTS[path];
    if (redirect) {
      res.writeHead(redirect[0], { location: redirect[1], "content-type": "text/html" }).end(`<a href="${redirect[1]}">moved</a>`);
      return;
    }
    const links = PAGES[path];
    if (links) {
      res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><html><head><title>${path}</title></head><body>${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</body></html>`);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  });
  site = await listenOnLoopback(server);
});

afterAll(async () => {
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe("a seed that redirects, packaged", () => {
  it("the WACZ lists each redirected seed under the URL asked for and the URL it landed at, and holds their records", async () => {
    const statsFile = join(cwd, "stats.json");
    const result = await runCli("crawl", [
      "--url", `${site.url}/old/`, "--url", `${site.url}/temp`, "--scopeType", "host",
      "--collection", "moved", "--cwd", cwd, "--workers", "2", "--generateWACZ", "--netIdleWait", "1", "--statsFilename", statsFile, ...NO_BEHAVIORS,
    ], { timeoutMs: 170_000 });
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(JSON.parse(readFileSync(statsFile, "utf8"))).toMatchObject({ crawled: 4, failed: 0, queued: 0, pending: 0, status: "done" });

    const url = (path: string) => site.url + path;
    const seeds = [url("/old/"), url("/landed/"), url("/temp"), url("/landed-temp/")].sort();
    const others = [url("/landed/a.html"), url("/landed-temp/b.html")].sort();

    const dir = join(cwd, "collections", "moved");
    const wacz = await readZip(join(dir, "moved.wacz"));
    const inWacz = (file: string) => (wacz.get(file)?.data.toString().trim().split("\n").slice(1) ?? []).map((l) => JSON.parse(l) as { url: string; seed: boolean; depth: number; status: number; ts: string });
    const waczSeeds = inWacz("pages/pages.jsonl");
    expect(waczSeeds.map((p) => p.url).sort()).toEqual(seeds);
    expect(waczSeeds.every((p) => p.seed && p.depth === 0 && p.status === 200)).toBe(true);
    // The landed URL's entry is the seed's capture: the same time (replay finds the landed page at it).
    const tsOf = (u: string) => waczSeeds.find((p) => p.url === u)?.ts;
    expect(tsOf(url("/landed/"))).toBe(tsOf(url("/old/")));
    expect(tsOf(url("/landed-temp/"))).toBe(tsOf(url("/temp")));
    expect(inWacz("pages/extraPages.jsonl").map((p) => p.url).sort()).toEqual(others);
    // The WACZ lists what the collection's pages lists list.
    expect(listedPages(dir).map((p) => p.url).sort()).toEqual([...seeds, ...others].sort());

    // The WACZ's own WARC files, not the collection's.
    const warcs = [...wacz.keys()].filter((name) => name.startsWith("archive/"));
    expect(warcs.length).toBeGreaterThan(0);
    const records = warcs.flatMap((name) => {
      const copy = join(cwd, name.replace("/", "-"));
      writeFileSync(copy, wacz.get(name)?.data ?? Buffer.alloc(0));
      return readWarcRecords(copy);
    });
    const responses = records.filter((r) => r.headers.get("warc-type") === "response").map((r) => [r.headers.get("warc-target-uri"), httpStatus(r)] as const);
    expect(responses.filter(([u]) => !u?.endsWith("/favicon.ico")).sort()).toEqual(
      [[url("/old/"), 301], [url("/landed/"), 200], [url("/temp"), 302], [url("/landed-temp/"), 200], [url("/landed/a.html"), 200], [url("/landed-temp/b.html"), 200]].sort(),
    );
  }, 180_000);
});
