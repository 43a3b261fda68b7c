import puppeteer, { type Browser, type HTTPRequest } from "puppeteer-core";
import { createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback, type LoopbackListener } from "../../../fixtures/loopback.js";
import { IN_PAGE_SCRIPT_NAMES, madeByBehaviors, madeByBrowserItself, namedScript } from "../../../src/util/requestInitiators.js";

// Who made each request, as Chromium reports it: scripts installed as the crawler installs them (the page
// watch wrapping fetch, the behaviors), a page handler a behavior's click runs, and the browser's own icon fetch.
let browser: Browser;
let server: LoopbackListener;
const made = new Map<string, { behaviors: boolean; browser: boolean }>();

beforeAll(async () => {
  server = await listenOnLoopback(createServer((req, res) => {
    if (req.url === "/") return res.writeHead(200, { "content-type": "text/html" }).end(`<link rel="icon" href="/icon.png"><script>document.addEventListener("click", () => fetch("/clicked.json"));</script><img src="/shown.png">`);
    res.writeHead(200, { "content-type": req.url?.endsWith(".png") ? "image/png" : "application/json" }).end("{}");
  }));
  browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const tab = await browser.newPage();
  await tab.evaluateOnNewDocument(namedScript(`self.fetch = new Proxy(self.fetch, { apply: (target, self, args) => Reflect.apply(target, self, args) });`, IN_PAGE_SCRIPT_NAMES.pageWatch));
  await tab.evaluateOnNewDocument(namedScript(`self.lib = { fetchMore: () => fetch("/autofetched.png"), click: () => document.dispatchEvent(new Event("click")) };`, IN_PAGE_SCRIPT_NAMES.behaviors));
  tab.on("request", (request: HTTPRequest) =>
    made.set(new URL(request.url()).pathname, { behaviors: madeByBehaviors(request.initiator()), browser: madeByBrowserItself(request.resourceType(), request.initiator()) }));
  await tab.goto(`${server.url}/`, { waitUntil: "load" });
  await tab.evaluate(() => (self as unknown as { lib: { fetchMore(): Promise<unknown> } }).lib.fetchMore());
  await tab.evaluate(() => (self as unknown as { lib: { click(): void } }).lib.click());
  await new Promise((resolve) => setTimeout(resolve, 1000));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("who made a request", () => {
  it("tells the behaviors' fetch and the browser's icon from the page's requests", () => {
    expect(Object.fromEntries(made)).toEqual({
      "/": { behaviors: false, browser: false },
      "/shown.png": { behaviors: false, browser: false },
      "/icon.png": { behaviors: false, browser: true },
      "/autofetched.png": { behaviors: true, browser: false },
      "/clicked.json": { behaviors: false, browser: false },
    });
  });
});
