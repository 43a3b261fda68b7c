// The static reading against the real thing: what Chromium's HTML parser fetches for a page (initiator "parser",
// from the document's own HTML, not from a stylesheet or a script) must be among what documentReferences() names.
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import puppeteer, { type Browser, type HTTPRequest, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { fixtureUrl, SITE_PAGES } from "../../../fixtures/site-manifest.js";
import { documentReferences } from "../../../src/static/documentReferences.js";
import { BROWSER_ARGS, closeBrowser } from "../../helpers/replay.js";
import { EVERY_KIND_HTML, EVERY_KIND_PATH } from "./everyKindPage.js";

const CONTENT_TYPES: Record<string, string> = { html: "text/html", css: "text/css", js: "text/javascript", png: "image/png" };

/** Serves the every-kind page, and an empty body of its extension's type for anything else. */
async function startEveryKindServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    const pathname = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    if (pathname === EVERY_KIND_PATH) {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(EVERY_KIND_HTML);
      return;
    }
    const type = CONTENT_TYPES[pathname.split(".").pop() ?? ""] ?? "application/octet-stream";
    response.writeHead(200, { "content-type": type }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Loads `url`; returns what Chromium's parser requested from the document's HTML, and what documentReferences() names. */
async function parserRequests(tab: Page, url: string): Promise<{ documentUrl: string; byParser: string[]; missed: string[] }> {
  const requested: HTTPRequest[] = [];
  // What a script fetches is refused: Chromium reports a load that a script's callback starts without a stack (the
  // fixture's image inserted once its data arrived) as the parser's, so it must not happen at all.
  const listener = (request: HTTPRequest) => {
    requested.push(request);
    if (request.initiator()?.type === "script") void request.abort();
    else void request.continue();
  };
  tab.on("request", listener);
  try {
    const response = await tab.goto(url, { waitUntil: "networkidle0" });
    const documentUrl = response!.url();
    const html = await response!.text();
    const byParser = [
      ...new Set(
        requested
          .filter((request) => request.initiator()?.type === "parser" && request.initiator()?.url === documentUrl)
          // blob: and javascript: values show up as requests, but fetch nothing from the network.
          .filter((request) => /^https?:/.test(request.url()))
          .map((request) => request.url().replace(/#.*/, ""))
          .filter((requestUrl) => requestUrl !== documentUrl),
      ),
    ].sort();
    const statics = new Set(documentReferences(html, documentUrl).requisites.map((r) => r.url));
    return { documentUrl, byParser, missed: byParser.filter((requestUrl) => !statics.has(requestUrl)) };
  } finally {
    tab.off("request", listener);
  }
}

describe("documentReferences against Chromium", () => {
  let fixtures: FixtureServer;
  let browser: Browser;
  let userDataDir: string;
  let tab: Page;
  beforeAll(async () => {
    fixtures = await startFixtureServer();
    userDataDir = await mkdtemp(path.join(os.tmpdir(), "static-requisites-"));
    browser = await puppeteer.launch({ executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, userDataDir, args: [...BROWSER_ARGS] });
    tab = await browser.newPage();
    await tab.setCacheEnabled(false);
    await tab.setRequestInterception(true);
  });
  afterAll(async () => {
    await closeBrowser(browser);
    await rm(userDataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    await fixtures.close();
  });

  it("every fixture site page: Chromium's parser requests nothing the static reading misses", { timeout: 60_000 }, async () => {
    const checked: Record<string, string[]> = {};
    for (const page of SITE_PAGES.filter((p) => p.contentType === "text/html")) {
      const { byParser, missed } = await parserRequests(tab, fixtureUrl(fixtures.url, page.path));
      expect(missed, page.path).toEqual([]);
      checked[page.path] = byParser.map((url) => new URL(url).pathname);
    }
    // What was checked, so the check cannot pass by finding nothing.
    const common = ["/site/css/style.css", "/site/js/main.js"];
    expect(checked).toEqual({
      "/site/index.html": [common[0], "/site/img/logo.png", common[1]],
      "/site/about.html": [common[0], "/site/img/logo.png", common[1]],
      "/site/old-page.html": [common[0], "/site/img/logo.png", common[1]],
      "/site/products.html": [common[0], "/site/img/copy/logo-copy.png", common[1]],
      "/site/gallery.html": [common[0], "/site/img/logo.png", "/site/img/photo.png", common[1]],
      "/site/dynamic.html": [common[0], "/site/js/dynamic.js", common[1]],
      "/site/contact.html": common,
      "/site/missing.html": [],
      "/site/gz/compressed.html": common,
      "/site/search.html?q=archive": common,
      "/site/caf%C3%A9.html": common,
      "/site/stream/chunked.html": [common[0], "/site/img/photo.png", common[1]],
    });
  });

  it("the every-kind page: Chromium's parser requests nothing the static reading misses", { timeout: 30_000 }, async () => {
    const server = await startEveryKindServer();
    try {
      const { byParser, missed } = await parserRequests(tab, server.url + EVERY_KIND_PATH);
      expect(missed).toEqual([]);
      // What Chromium fetched: one srcset candidate each, no <video> source or track when the video has a src, nothing
      // from <template>, <noscript> or the srcdoc frame (whose initiator is the frame).
      const assets = [
        "alt.css", "app.js", "app.webmanifest", "body-bg.png", "cell-bg.png", "classic.js", "font.woff2", "frame.html", "hero-1x.png",
        "imported.css", "inline-style.png", "logo.png", "main.css", "mod.js", "module.js", "movie.mp4", "next-data.json", "object.svg",
        "only-srcset.png", "pic.avif", "poster.jpg", "sound.mp3", "spaced.png", "sprite.svg", "submit.png", "svg-image.png", "svg-style.png", "svg-xlink.png", "table-bg.png",
      ];
      expect(byParser).toEqual([
        `${server.url}/abs/logo-w.png`,
        ...assets.map((name) => `${server.url}/site/assets/${name}`),
        "http://cdn.example/protocol-relative.png",
        "https://other.example/absolute.png",
      ]);
    } finally {
      await server.close();
    }
  });
});
