import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { listedPaths } from "../../helpers/pageLists.js";
import { readWarcRecords } from "../../helpers/warcFile.js";
import { pngFor } from "../../../fixtures/templateSite.js";

// A documentation site shaped like rustdoc's: each section's folder has its own `items.js` (the section's item list)
// beside its pages, and the shared `/static/main.js` builds each item page's sidebar from it by script. A section's index
// lists its items in its text. Hybrid capture must see one template of item pages across the sections (their folders'
// items.js by name), and a script-made sidebar that only names pages the crawl found already must not keep pages in
// the browser. In section "gamma" the sidebar names one more item (`item5.html`) that no document links: a verify page
// of the template there finds it, the template goes back to the browser, and the page is crawled as in browser mode.
// (Each template's first page the guard lets through is verified too, before any other is captured; then one in 5
// since the last verify page of any kind.) main.js also
// swaps the image of any `img.toggler` (Sphinx's collapsed module index): only beta's item3 has one, so the learning
// pages' scripts looked for it in vain, and that page is verified: its plus.png is stored as in browser mode.
const SECTIONS = ["alpha", "beta", "gamma"];
const ITEMS = [1, 2, 3, 4];
const sidebarItems = (section: string) => [...ITEMS.map((n) => `item${n}.html`), ...(section === "gamma" ? ["item5.html"] : [])];
const head = `<link rel="icon" href="data:,"><script defer src="items.js"></script><script defer src="/static/main.js"></script>`;
/**
 * The sidebar of an item page (an index page lists its items in its text), and the toggles Sphinx's doctools.js
 * collapses: a page with one shows plus.png in its place (only beta's item3 has one).
 */
const MAIN_JS = `const nav = document.querySelector("nav.sidebar");
if (document.querySelector("main.item")) for (const item of window.ITEMS || []) { const a = document.createElement("a"); a.href = item; a.textContent = item; nav.append(a); }
document.querySelectorAll("img.toggler").forEach((img) => { img.src = "/static/plus.png"; });`;
const TOGGLER_PAGE = "/docs/beta/item3.html";

function page(path: string): string | null {
  if (path === "/docs/index.html") return `<!doctype html><html><head><title>docs</title><link rel="icon" href="data:,"></head><body><main>${SECTIONS.map((s) => `<a href="${s}/index.html">${s}</a>`).join(" ")}</main></body></html>`;
  const match = /^\/docs\/(alpha|beta|gamma)\/(index|item[1-5])\.html$/.exec(path);
  if (!match) return null;
  const [, section, name] = match as unknown as [string, string, string];
  if (name === "item5" && section !== "gamma") return null;
  const toggler = path === TOGGLER_PAGE ? `<img class="toggler" src="/static/minus.png" alt="-">` : "";
  const text = name === "index" ? ITEMS.map((n) => `<a href="item${n}.html">item ${n}</a>`).join(" ") : `<p>${toggler}${section} ${name}</p>`;
  return `<!doctype html><html><head><title>${section} ${name}</title>${head}</head><body><nav class="sidebar"></nav><main class="${name === "index" ? "module" : "item"}">${text}</main></body></html>`;
}

/** Every page a browser-mode crawl reaches: the hub, each section's index and items, and gamma's script-only item5. */
const EVERY_PAGE = ["/docs/index.html", ...SECTIONS.flatMap((s) => [`/docs/${s}/index.html`, ...sidebarItems(s).map((i) => `/docs/${s}/${i}`)])].sort();

let server: Server;
let url: string;
const crawls: Record<"browser" | "hybrid", { cwd: string; crawl: CliResult }> = {} as never;
const captureLines = () => readFileSync(join(crawls.hybrid.cwd, "collections", "docs", "reports", "capture.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { url: string; capture: string; template: string | null; purpose?: string; reason?: string; verify?: { missing: string[]; outcome: string } });

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "/";
    const section = /^\/docs\/(alpha|beta|gamma)\/items\.js$/.exec(path)?.[1];
    if (section) return res.writeHead(200, { "content-type": "text/javascript" }).end(`window.ITEMS = ${JSON.stringify(sidebarItems(section))};`);
    if (path === "/static/main.js") return res.writeHead(200, { "content-type": "text/javascript" }).end(MAIN_JS);
    if (path === "/static/minus.png" || path === "/static/plus.png") return res.writeHead(200, { "content-type": "image/png" }).end(pngFor(path));
    const html = page(path);
    if (html === null) return res.writeHead(404, { "content-length": "0" }).end();
    res.writeHead(200, { "content-type": "text/html" }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // One worker: the pages come in breadth-first order, so which pages are verified is known.
  for (const mode of ["browser", "hybrid"] as const) {
    const cwd = mkdtempSync(join(tmpdir(), `crawl-sections-${mode}-`));
    const crawl = await runCli("crawl", ["--url", `${url}/docs/index.html`, "--scopeType", "prefix", "--workers", "1", "--captureMode", mode, "--hybridVerifyEvery", "5", "--behaviors", "", "--collection", "docs", "--cwd", cwd], { timeoutMs: 150_000 });
    crawls[mode] = { cwd, crawl };
  }
}, 320_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  for (const { cwd } of Object.values(crawls)) rmSync(cwd, { recursive: true, force: true });
});

const pagePaths = (mode: "browser" | "hybrid") => listedPaths(join(crawls[mode].cwd, "collections", "docs"), (u) => u.pathname);
const storedPaths = (mode: "browser" | "hybrid") => {
  const archive = join(crawls[mode].cwd, "collections", "docs", "archive");
  const records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
  return [...new Set(records.filter((r) => r.headers.get("warc-type") === "response").map((r) => new URL(r.headers.get("warc-target-uri")!).pathname))].sort();
};

describe("sections with a script of their own in their folder, in hybrid capture", () => {
  it("crawl the same pages and store the same URLs as a browser-mode crawl", () => {
    for (const mode of ["browser", "hybrid"] as const) expect(crawls[mode].crawl.code, crawls[mode].crawl.stderr.slice(-3000)).toBe(0);
    expect(pagePaths("browser")).toEqual(EVERY_PAGE);
    expect(pagePaths("hybrid")).toEqual(EVERY_PAGE);
    expect(storedPaths("hybrid")).toEqual(storedPaths("browser"));
    expect(storedPaths("hybrid")).toEqual([...EVERY_PAGE, "/docs/alpha/items.js", "/docs/beta/items.js", "/docs/gamma/items.js", "/static/main.js", "/static/minus.png", "/static/plus.png"].sort());
  });

  it("group each kind of page across the sections: one template of indexes, one of items", () => {
    const lines = captureLines();
    const templateOf = (path: string) => lines.find((l) => l.url === url + path)!.template;
    expect(new Set(SECTIONS.map((s) => templateOf(`/docs/${s}/index.html`))).size).toBe(1);
    expect(new Set(SECTIONS.flatMap((s) => ITEMS.map((n) => templateOf(`/docs/${s}/item${n}.html`)))).size).toBe(1);
  });

  it("capture statically the item pages whose sidebar names only pages found already, until a verify page finds one that is not; a page with what the script looks for and no learning page had is verified", () => {
    const how = Object.fromEntries(captureLines().map((l) => [new URL(l.url).pathname, l.purpose ? `${l.capture} ${l.purpose}` : l.capture]));
    expect(how).toEqual({
      "/docs/index.html": "browser learn",
      "/docs/alpha/index.html": "browser learn",
      "/docs/beta/index.html": "browser learn",
      "/docs/gamma/index.html": "browser verify",
      "/docs/alpha/item1.html": "browser learn",
      "/docs/alpha/item2.html": "browser learn",
      "/docs/alpha/item3.html": "browser verify",
      "/docs/alpha/item4.html": "static",
      "/docs/beta/item1.html": "static",
      "/docs/beta/item2.html": "static",
      "/docs/beta/item3.html": "browser verify",
      "/docs/beta/item4.html": "static",
      // The 5th page since beta's item3 (verified for its toggle) is sampled.
      "/docs/gamma/item1.html": "static",
      "/docs/gamma/item2.html": "static",
      "/docs/gamma/item3.html": "static",
      "/docs/gamma/item4.html": "browser verify",
      "/docs/gamma/item5.html": "browser fallen-back",
    });
    // The page with a toggle: main.js looked for img.toggler on the learning pages, which held none.
    expect(captureLines().find((l) => l.url === url + TOGGLER_PAGE)).toMatchObject({ reason: "the document holds what the template's scripts look for and no browsed page held: img.toggler" });
    const verify = captureLines().filter((l) => l.purpose === "verify").map((l) => [new URL(l.url).pathname, l.verify?.missing, l.verify?.outcome]);
    expect(verify).toEqual([
      ["/docs/gamma/index.html", [], "matched"],
      ["/docs/alpha/item3.html", [], "matched"],
      // What main.js does with the toggle: plus.png, the same URL on any page, adopted for the template.
      [TOGGLER_PAGE, [`${url}/static/plus.png`], "adopted"],
      ["/docs/gamma/item4.html", [`${url}/docs/gamma/item5.html`], "fell-back"],
    ]);
  });
});
