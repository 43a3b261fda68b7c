// A page captured without a browser: the document fetched with the headers Chromium sends for a typed navigation
// (plus Cookie), decoded (gzip, windows-1252 by its <meta charset>), parsed; then its requisites, what its stylesheets
// name through @import, and the template's learned fetches, each with Chromium's headers for its kind, each once per
// crawl, stored through the real capture pipeline and read back from the WARC with warcio.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import puppeteer, { type HTTPRequest } from "puppeteer-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { WARCParser } from "warcio";
import type { Exchange } from "../../../src/archive/exchange.js";
import { Blocking } from "../../../src/block/blocking.js";
import { parseBlockRule } from "../../../src/block/rules.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { rulesOutsideACrawl } from "../../../src/fetch/connectionRules.js";
import { FallbackFetcher } from "../../../src/fetch/fallbackFetcher.js";
import { StaticPageLoader } from "../../../src/page/staticPage.js";
import type { ExchangeSink, StoreOutcome } from "../../../src/pipeline/exchangeSink.js";
import { openCapturePipeline, type OpenPipeline } from "../../../src/pipeline/openPipeline.js";
import { browserRequestHeaders, type BrowserIdentity, type BrowserRequest } from "../../../src/static/browserRequestHeaders.js";
import { Liveness } from "../../../src/state/membership/fencing.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { BROWSER_ARGS, closeBrowser } from "../../helpers/replay.js";

const IDENTITY: BrowserIdentity = {
  userAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
  acceptLanguage: "de-DE,de;q=0.9",
};
const COOKIE = "session=abc123";
const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");

// windows-1252: é is 0xE9, à is 0xE0; declared only by the <meta charset>, the body sent gzip-encoded.
const PAGE1 = Buffer.from(
  `<!doctype html><html><head><meta charset="windows-1252"><title>  Caf\xe9
  page </title>
<link rel="stylesheet" href="/css/main.css">
<link rel="icon" href="/favicon.png">
<script src="/js/app.js"></script>
</head><body>
<header>Site header</header>
<h1>Caf\xe9 d\xe9j\xe0 vu</h1>
<p>First paragraph <b>bold</b></p>
<img src="/img/a.png" srcset="/img/a-2x.png 2x, /img/a-3x.png 3x">
<img src="/img/moved.png">
<img src="/blocked/ad.png">
<script>var s = "<a href='/not-a-link'>";</script>
<noscript>enable scripts</noscript>
<a href="/page2.html">Two</a> <a href="other.html#part">Other</a>
</body></html>`,
  "latin1",
);
const PAGE2 = `<!doctype html><html><head><meta charset="utf-8"><title>Second</title><link rel="stylesheet" href="/css/main.css"></head>
<body><h1>Second</h1><img src="/img/a.png"><img src="/img/only2.png"><a href="/page1.html">One</a><script src="/js/gone.js"></script></body></html>`;
// Names a script the site does not have (a 404 the crawl stored from page 2) and an image stored already.
const PAGE4 = `<!doctype html><html><head><title>Fourth</title><script src="/js/gone.js"></script></head><body><img src="/img/a.png"></body></html>`;
const PAGE3 = `<!doctype html><html><head><title>Third</title><link rel="stylesheet" href="/css/fresh.css"><link rel="manifest" href="/app.webmanifest"><script type="module" src="/js/mod.js"></script></head>
<body><img src="/img/moved.png"><img src="/blocked/x.png"><img src="/img/three.png"></body></html>`;

interface Hit {
  path: string;
  headers: [string, string][];
}

let server: Server;
let origin: string;
const hits: Hit[] = [];

function rawPairs(req: IncomingMessage): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) pairs.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
  // The HTTP client's own: not the browser's business either (browserRequestHeaders leaves them out).
  return pairs.filter(([name]) => !["host", "connection"].includes(name.toLowerCase()));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "/";
    hits.push({ path, headers: rawPairs(req) });
    const send = (type: string, body: string | Buffer) => res.writeHead(200, { "Content-Type": type }).end(body);
    switch (path) {
      case "/page1.html":
        res.writeHead(200, { "Content-Type": "text/html", "Content-Encoding": "gzip" }).end(gzipSync(PAGE1));
        return;
      case "/page2.html":
        return send("text/html; charset=utf-8", PAGE2);
      case "/page3.html":
        return send("text/html", PAGE3);
      case "/page4.html":
        return send("text/html", PAGE4);
      case "/missing.html":
        res.writeHead(404, { "Content-Type": "text/html" }).end("<h1>not here</h1>");
        return;
      case "/deep.html":
        return send("text/html", `<!doctype html><body>${"<div>".repeat(20_000)}deep${"</div>".repeat(20_000)}</body>`);
      case "/css/main.css":
        return send("text/css", `@import url("/css/base.css");\nbody { background: url(/img/bg.png) }`);
      case "/css/base.css":
        return send("text/css", `@font-face { font-family: F; src: url(/fonts/f.woff2) format("woff2"); }\nh1 { background-image: url("../img/h1.png") }`);
      case "/css/fresh.css":
        return send("text/css", `p { background: url(/img/fresh-bg.png) }`);
      case "/fonts/f.woff2":
        return send("font/woff2", Buffer.from("wOF2 font"));
      case "/js/app.js":
        return send("text/javascript", `fetch("/api/items.json");`);
      case "/api/items.json":
        return send("application/json", `{"items":[]}`);
      case "/img/moved.png":
        res.writeHead(301, { Location: "/img/real.png" }).end();
        return;
      default:
        if (path.endsWith(".png")) return send("image/png", PNG);
        res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  hits.length = 0;
});

function loader(): StaticPageLoader {
  const blocking = new Blocking({ rules: [parseBlockRule("/blocked/")], adHosts: null, blockMessage: "", adBlockMessage: "" });
  // The worker's fetcher: its own Accept-Language is the tabs' (the browser's headers name theirs).
  const fetcher = new FallbackFetcher({ rules: { ...rulesOutsideACrawl(), blocking }, userAgent: "crawler's own", headers: [["Accept-Language", "xx"]] });
  return new StaticPageLoader({ fetcher, identity: IDENTITY, cookieHeader: async () => COOKIE, rateLimitStatusCodes: [429] });
}

/** What the server sees of the browser's headers: a direct fetch asks for the codings replay reads, and sends no Range. */
function onTheWire(request: BrowserRequest): [string, string][] {
  const browser = browserRequestHeaders(request, IDENTITY).filter(([name]) => name !== "Accept-Encoding" && name !== "Range");
  return [["Accept-Encoding", "gzip, deflate, br"], ...browser, ["Cookie", COOKIE]];
}

const paths = () => hits.map((h) => h.path).sort();
const headersOf = (path: string) => hits.find((h) => h.path === path)?.headers;

/** A sink that stores nothing and remembers what it was given (what a crawl holds is `stored`). */
class RecordingSink implements ExchangeSink {
  readonly given: Exchange[] = [];
  private readonly stored = new Map<string, number>();
  async store(exchange: Exchange): Promise<StoreOutcome> {
    this.given.push(exchange);
    this.stored.set(exchange.url, exchange.status);
    return { kind: "skipped", reason: "dry-run", wacz: null };
  }
  async hasStoredResponse(url: string): Promise<boolean> {
    return this.stored.get(url) === 200;
  }
  async storedFinalStatus(url: string): Promise<number | null> {
    const status = this.stored.get(url);
    return status === 200 || status === 404 || status === 410 ? status : null;
  }
  async canListPageIn(): Promise<boolean> {
    return true;
  }
  async isArchivedPayload(): Promise<boolean> {
    return false;
  }
  async storeWebSocket(): Promise<number> {
    return 0;
  }
}

describe("StaticPageLoader through the capture pipeline", () => {
  let redis: TestRedis;
  let dir: string;
  beforeAll(async () => {
    redis = await startTestRedis();
    dir = mkdtempSync(join(tmpdir(), "static-page-"));
  });
  afterAll(async () => {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("captures a page's document, requisites, what its stylesheets name and learned fetches, each once per crawl, as the browser would ask for them", async () => {
    const membership = new Membership(redis.client, "static", "test-host-1-abcd");
    const liveness = new Liveness(membership, () => undefined);
    await liveness.start();
    const dedupe = new DedupeIndex(redis.client, "static");
    await dedupe.registerCrawl();
    const archiveDir = join(dir, "archive");
    let pipeline: OpenPipeline | null = null;
    try {
      pipeline = await openCapturePipeline({
        settings: { crawlId: "static", collection: "static", title: null, rolloverSize: 1e9, dedupeMinSize: 512 },
        stateRedis: redis.client, dedupe, membership, liveness, writer: "main", archiveDir, stop: { fatal: () => undefined },
      });
      const pages = loader();
      const page1 = `${origin}/page1.html`;

      const doc = await pages.fetchDocument(`${page1}#top`);
      expect(doc.url).toBe(page1);
      expect(doc.notStatic).toBeNull();
      expect(doc.parsed?.title).toBe("Café page");
      expect(doc.exchange.resourceType).toBe("Document");
      expect(doc.exchange.pageDocument).toBe(true);
      expect(doc.exchange.identifiedPayloadType).toBe(`text/html; charset="windows-1252"`);
      expect(paths()).toEqual(["/page1.html"]);
      expect(headersOf("/page1.html")).toEqual(onTheWire({ url: page1, kind: "document" }));

      const result = await pages.capture(doc, { fetches: [`${origin}/api/items.json`], links: [`${origin}/learned/link`], sink: pipeline.sink, text: true });
      expect(result.error).toBeNull();
      expect(paths()).toEqual([
        "/api/items.json", "/css/base.css", "/css/main.css", "/favicon.png", "/fonts/f.woff2", "/img/a-2x.png", "/img/a-3x.png", "/img/a.png",
        "/img/bg.png", "/img/h1.png", "/img/moved.png", "/img/real.png", "/js/app.js", "/page1.html",
      ]);
      expect(headersOf("/img/a.png")).toEqual(onTheWire({ url: `${origin}/img/a.png`, kind: "image", referrer: page1 }));
      expect(headersOf("/css/main.css")).toEqual(onTheWire({ url: `${origin}/css/main.css`, kind: "stylesheet", referrer: page1 }));
      // What a stylesheet names is asked for from the document, the stylesheet the referrer.
      expect(headersOf("/css/base.css")).toEqual(onTheWire({ url: `${origin}/css/base.css`, kind: "stylesheet", referrer: `${origin}/css/main.css`, initiatorOrigin: origin }));
      expect(headersOf("/fonts/f.woff2")).toEqual(onTheWire({ url: `${origin}/fonts/f.woff2`, kind: "font", referrer: `${origin}/css/base.css`, initiatorOrigin: origin }));

      expect(result.title).toBe("Café page");
      expect(result.links).toEqual([`${origin}/page2.html`, `${origin}/other.html#part`, `${origin}/learned/link`]);
      expect(result.favicon).toBe(`${origin}/favicon.png`);
      expect(result.extracts).toEqual({ text: "Café déjà vu\nFirst paragraph\nbold\nTwo\nOther", screenshots: [] });
      expect(result.truncated).toEqual([]);
      expect(result.documentWacz).toBe("static.wacz");
      expect(result.captured?.map((c) => [c.url.slice(origin.length), c.status, c.mime, c.resourceType, c.location])).toEqual([
        ["/page1.html", 200, "text/html", "Document", null],
        ["/css/main.css", 200, "text/css", "Stylesheet", null],
        ["/css/base.css", 200, "text/css", "Stylesheet", null],
        ["/fonts/f.woff2", 200, "font/woff2", "Font", null],
        ["/img/h1.png", 200, "image/png", "Image", null],
        ["/img/bg.png", 200, "image/png", "Image", null],
        ["/favicon.png", 200, "image/png", "Other", null],
        ["/js/app.js", 200, "text/javascript", "Script", null],
        ["/img/a.png", 200, "image/png", "Image", null],
        ["/img/a-2x.png", 200, "image/png", "Image", null],
        ["/img/a-3x.png", 200, "image/png", "Image", null],
        ["/img/moved.png", 301, "", "Image", "/img/real.png"],
        ["/img/real.png", 200, "image/png", "Image", null],
        ["/api/items.json", 200, "application/json", "Fetch", null],
      ]);
      const asked = ["/css/main.css", "/css/base.css", "/fonts/f.woff2", "/img/h1.png", "/img/bg.png", "/favicon.png", "/js/app.js", "/img/a.png", "/img/a-2x.png", "/img/a-3x.png", "/img/moved.png"];
      expect(result.fetched).toEqual([...asked, "/api/items.json"].map((p) => origin + p));
      // The plan of the same document is what the capture asked for besides the learned fetches, read from what the
      // capture kept of the stylesheets: nothing is fetched for it.
      hits.length = 0;
      expect(await pages.plannedUrls(doc)).toEqual(asked.map((p) => origin + p));
      expect(hits).toEqual([]);

      // Another page naming the same stylesheet and image: only what is new is fetched.
      const doc2 = await pages.fetchDocument(`${origin}/page2.html`);
      const second = await pages.capture(doc2, { fetches: [], links: [], sink: pipeline.sink });
      expect(paths()).toEqual(["/img/only2.png", "/js/gone.js", "/page2.html"]);
      // What the crawl had stored is the page's all the same (its --qa record names it), as a 200 of unread type.
      expect(second.captured?.map((c) => [c.url.slice(origin.length), c.status, c.mime])).toEqual([
        ["/page2.html", 200, "text/html"], ["/css/main.css", 200, ""], ["/css/base.css", 200, ""], ["/fonts/f.woff2", 200, ""], ["/img/h1.png", 200, ""], ["/img/bg.png", 200, ""], ["/img/a.png", 200, ""], ["/img/only2.png", 200, "image/png"],
        ["/js/gone.js", 404, ""],
      ]);
      expect(second.fetched.map((u) => u.slice(origin.length))).toEqual(["/css/main.css", "/css/base.css", "/fonts/f.woff2", "/img/h1.png", "/img/bg.png", "/img/a.png", "/img/only2.png", "/js/gone.js"]);
      expect(second.extracts).toBeUndefined();

      // A requisite the crawl stored as a 404 is not asked for again: the page names it, with that status.
      hits.length = 0;
      const fourth = await pages.capture(await pages.fetchDocument(`${origin}/page4.html`), { fetches: [], links: [], sink: pipeline.sink });
      expect(paths()).toEqual(["/page4.html"]);
      expect(fourth.captured?.map((c) => [c.url.slice(origin.length), c.status, c.mime])).toEqual([["/page4.html", 200, "text/html"], ["/js/gone.js", 404, ""], ["/img/a.png", 200, ""]]);
      expect(fourth.fetched.map((u) => u.slice(origin.length))).toEqual(["/js/gone.js", "/img/a.png"]);

      await pipeline.close();
      const warcs = readdirSync(archiveDir, { recursive: true }).map(String).filter((f) => f.endsWith(".warc.gz"));
      const records: { type: string; url: string; headers: [string, string][]; payload: Buffer }[] = [];
      for (const file of warcs) {
        for await (const record of new WARCParser([readFileSync(join(archiveDir, file))])) {
          const payload = Buffer.from(await record.readFully(false));
          const headers: [string, string][] = [];
          record.httpHeaders?.headers.forEach((value, name) => headers.push([name, value]));
          records.push({ type: record.warcType ?? "", url: record.warcTargetURI ?? "", headers, payload });
        }
      }
      const responses = records.filter((r) => r.type === "response").map((r) => r.url.slice(origin.length)).sort();
      expect(responses).toEqual([
        "/api/items.json", "/css/base.css", "/css/main.css", "/favicon.png", "/fonts/f.woff2", "/img/a-2x.png", "/img/a-3x.png", "/img/a.png", "/img/bg.png",
        "/img/h1.png", "/img/moved.png", "/img/only2.png", "/img/real.png", "/js/app.js", "/js/gone.js", "/page1.html", "/page2.html", "/page4.html",
      ]);
      expect(records.filter((r) => r.type === "request").map((r) => r.url.slice(origin.length)).sort()).toEqual(responses);
      // The document as sent (gzip), its request record the headers sent.
      const document = records.find((r) => r.type === "response" && r.url === page1)!;
      expect(document.payload.equals(gzipSync(PAGE1))).toBe(true);
      const request = records.find((r) => r.type === "request" && r.url === page1)!;
      // (warcio hands the headers sorted by name: their order is checked on the wire above.)
      const lowered = (pairs: [string, string][]) => pairs.map(([n, v]) => `${n.toLowerCase()}: ${v}`).sort();
      expect(lowered(request.headers.filter(([n]) => n.toLowerCase() !== "host"))).toEqual(lowered(onTheWire({ url: page1, kind: "document" })));
    } finally {
      liveness.stop();
    }
  });
});

describe("StaticPageLoader without a pipeline", () => {
  it("leaves a document that is not a 200 to the browser, saying why", async () => {
    const doc = await loader().fetchDocument(`${origin}/missing.html`);
    expect(doc.parsed).toBeNull();
    expect(doc.notStatic).toBe("an error status (404)");
    expect(doc.exchange.status).toBe(404);
  });

  it("leaves a document nested deeper than Chromium's tree to the browser, unparsed", async () => {
    const doc = await loader().fetchDocument(`${origin}/deep.html`);
    expect(doc.parsed).toBeNull();
    expect(doc.notStatic).toBe("nested deeper than 512 elements");
  });

  it("plans what a capture fetches: an unread stylesheet is fetched for its references, not stored; blocked URLs are left out", async () => {
    const pages = loader();
    const doc = await pages.fetchDocument(`${origin}/page3.html`);
    hits.length = 0;
    const planned = await pages.plannedUrls(doc);
    expect(planned.map((u) => u.slice(origin.length))).toEqual(["/css/fresh.css", "/img/fresh-bg.png", "/app.webmanifest", "/js/mod.js", "/img/moved.png", "/img/three.png"]);
    expect(paths()).toEqual(["/css/fresh.css"]);

    hits.length = 0;
    const sink = new RecordingSink();
    const result = await pages.capture(doc, { fetches: [], links: [], sink });
    expect(result.fetched).toEqual(planned);
    expect(paths()).toEqual(["/app.webmanifest", "/css/fresh.css", "/img/fresh-bg.png", "/img/moved.png", "/img/real.png", "/img/three.png", "/js/mod.js"]);
    // A module script is a cors request (same-origin: with the cookie); the manifest is fetched without credentials.
    const page3 = `${origin}/page3.html`;
    expect(headersOf("/js/mod.js")).toEqual(onTheWire({ url: `${origin}/js/mod.js`, kind: "script", cors: true, referrer: page3 }));
    expect(headersOf("/app.webmanifest")).toEqual(onTheWire({ url: `${origin}/app.webmanifest`, kind: "manifest", referrer: page3 }).filter(([n]) => n !== "Cookie"));
    expect(sink.given.map((e) => [e.url.slice(origin.length), e.resourceType, e.pageDocument])).toEqual(
      expect.arrayContaining([["/page3.html", "Document", true], ["/css/fresh.css", "Stylesheet", false], ["/img/real.png", "Image", false]]),
    );
    expect(sink.given).toHaveLength(8);
  });

  it("refuses to capture a document it did not parse", async () => {
    const pages = loader();
    const doc = await pages.fetchDocument(`${origin}/missing.html`);
    await expect(pages.capture(doc, { fetches: [], links: [], sink: new RecordingSink() })).rejects.toThrow("not a static page: an error status (404)");
    await pages.discard(doc);
  });
});

describe("StaticPageLoader against Chromium", () => {
  it("fetches what Chromium fetches for the page (given its script's fetch), each with the resource type Chromium gives it", { timeout: 60_000 }, async () => {
    const userDataDir = mkdtempSync(join(tmpdir(), "static-page-chromium-"));
    const browser = await puppeteer.launch({ executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, userDataDir, args: [...BROWSER_ARGS] });
    const byBrowser = new Map<string, string>();
    try {
      const tab = await browser.newPage();
      await tab.setCacheEnabled(false);
      tab.on("request", (request: HTTPRequest) => {
        if (request.url().startsWith(origin)) byBrowser.set(request.url(), request.resourceType());
      });
      await tab.goto(`${origin}/page1.html`, { waitUntil: "networkidle0" });
      // A favicon is fetched by the browser once the page has loaded, if at all: give it its moment.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await closeBrowser(browser);
      rmSync(userDataDir, { recursive: true, force: true });
    }
    const pages = loader();
    const doc = await pages.fetchDocument(`${origin}/page1.html`);
    const result = await pages.capture(doc, { fetches: [`${origin}/api/items.json`], links: [], sink: new RecordingSink() });
    const byStatic = new Map((result.captured ?? []).map((c) => [c.url, c.resourceType.toLowerCase()]));
    // Chromium fetches the blocked image (nothing blocks it there), one srcset candidate, and no font no element uses;
    // the static capture leaves the first out and takes every candidate and every @font-face source.
    expect([...byBrowser.keys()].map((url) => url.slice(origin.length)).sort()).toEqual([
      "/api/items.json", "/blocked/ad.png", "/css/base.css", "/css/main.css", "/favicon.png", "/img/a.png", "/img/bg.png", "/img/h1.png",
      "/img/moved.png", "/img/real.png", "/js/app.js", "/page1.html",
    ]);
    const missed = [...byBrowser.keys()].filter((url) => !byStatic.has(url) && url !== `${origin}/blocked/ad.png`);
    expect(missed).toEqual([]);
    const typeDiffers = [...byBrowser].filter(([url, type]) => byStatic.has(url) && byStatic.get(url) !== type);
    expect(typeDiffers).toEqual([]);
  });
});
