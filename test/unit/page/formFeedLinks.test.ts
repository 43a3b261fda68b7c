/**
 * The GET forms' links of one page as the crawler reads them (readPage, forms only), in real Chromium: which
 * forms are search boxes that give no twin of the page, and which forms still give their URLs.
 */
import http from "node:http";
import puppeteer, { type Browser } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback, type LoopbackListener } from "../../../fixtures/loopback.js";
import { readPage } from "../../../src/page/linkExtract.js";
import { BROWSER_ARGS } from "../../helpers/replay.js";

let browser: Browser;
let site: LoopbackListener;
/** The body of the page served at each path (any query). */
const bodies = new Map<string, string>();

beforeAll(async () => {
  const server = http.createServer((req, res) => {
    const body = bodies.get(new URL(req.url ?? "/", "http://x").pathname) ?? "";
    res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><title>t</title><link rel="icon" href="data:,">${body}`);
  });
  site = await listenOnLoopback(server);
  browser = await puppeteer.launch({ executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, args: [...BROWSER_ARGS] });
});
afterAll(async () => {
  await browser?.close();
  await site?.close();
});

/** The form links of `body` served at `path` (with its query), as path and query. */
async function formLinks(path: string, body: string): Promise<string[]> {
  const url = new URL(path, site.url);
  bodies.set(url.pathname, body);
  const tab = await browser.newPage();
  try {
    await tab.goto(url.href);
    const { links } = await readPage(tab, [], { forms: true, feeds: false });
    return links.map((link) => {
      const u = new URL(link);
      return u.origin === site.url ? u.pathname + u.search : u.href;
    });
  } finally {
    await tab.close();
  }
}

describe("search boxes: only empty text-like fields and hidden ones", () => {
  it("to the page itself: no link (mdBook's searchbar, a search box on a page with a query, to a #fragment)", async () => {
    expect(await formLinks("/book/ch1.html", `<form id="searchbar-outer"><input type="search" id="searchbar" name="searchbar"></form>`)).toEqual([]);
    expect(await formLinks("/list?page=2", `<form><input type="hidden" name="page" value="2"><input name="q"><button>go</button></form>`)).toEqual([]);
    expect(await formLinks("/docs/a.html", `<form action="a.html#results"><input name="q"></form>`)).toEqual([]);
    // Every free-text kind, empty; unchecked boxes, unnamed, disabled (itself or its fieldset), file and buttons add nothing.
    expect(await formLinks("/all.html", `<form>
      <input name="t"><input type="search" name="s"><input type="email" name="e"><input type="url" name="u"><input type="tel" name="p">
      <input type="number" name="n"><input type="date" name="d"><textarea name="a"></textarea><input type="bogus" name="b">
      <input type="checkbox" name="c"><input type="radio" name="r" value="1"><select><option>unnamed</option></select>
      <select name="off" disabled><option>x</option></select><fieldset disabled><input name="inside" value="x"></fieldset>
      <input type="file" name="f"><input type="submit" name="go" value="Go"><input type="image" name="img" alt="go"><button name="b2" value="1">b</button>
    </form>`)).toEqual([]);
  });

  it("elsewhere: the action with the empty fields and the hidden ones (WordPress's ?s=, Sphinx's quick search)", async () => {
    expect(await formLinks("/2024/01/post/", `<form role="search" method="get" action="/"><input type="search" name="s" value=""><input type="submit" value="Search"></form>`)).toEqual(["/?s="]);
    expect(await formLinks("/api/module.html", `<form class="search" action="../search.html" method="get"><input type="text" name="q"><input type="submit" value="Go">
      <input type="hidden" name="check_keywords" value="yes"><input type="hidden" name="area" value="default"></form>`)).toEqual(["/search.html?q=&check_keywords=yes&area=default"]);
    // A hidden filter to another listing.
    expect(await formLinks("/shop/", `<form action="/shop/list"><input type="hidden" name="cat" value="books"><input name="q"></form>`)).toEqual(["/shop/list?cat=books&q="]);
  });
});

describe("forms that carry real values: their URLs as before", () => {
  it("a filled field, a checked box, a range, a select (and its other options) beside an empty field", async () => {
    expect(await formLinks("/p.html", `<form><input name="q" value="cats"></form>`)).toEqual(["/p.html?q=cats"]);
    expect(await formLinks("/p.html", `<form><input name="q"><input type="checkbox" name="all" checked></form>`)).toEqual(["/p.html?q=&all=on"]);
    expect(await formLinks("/p.html", `<form><input name="q"><input type="range" name="r" min="0" max="10" value="4"></form>`)).toEqual(["/p.html?q=&r=4"]);
    expect(await formLinks("/p.html", `<form><input name="q"><select name="sort"><option>new</option><option>old</option></select></form>`))
      .toEqual(["/p.html?q=&sort=new", "/p.html?q=&sort=old"]);
  });

  it("hidden fields and no field to fill in, to the page itself: a link (pagination by a hidden field)", async () => {
    expect(await formLinks("/list?page=2", `<form><input type="hidden" name="page" value="3"><button>Next</button></form>`)).toEqual(["/list?page=3"]);
  });
});
