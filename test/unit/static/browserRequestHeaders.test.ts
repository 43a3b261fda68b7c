// browserRequestHeaders() against the real thing: the headers real Chromium sent for a navigation and for each
// requisite of a page, as the server received them (raw order): same-origin, same-site (another port), cross-site
// (other.localhost, a trustworthy name mapped to loopback), to a non-trustworthy name (other.test, plain http), and
// from an https page (secure.test, a test CA, HTTP/1.1) including its downgrade to http.
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import puppeteer, { type Browser } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestAuthority } from "../../../fixtures/archivedWeb/certificates.js";
import { browserRequestHeaders, type BrowserRequest } from "../../../src/static/browserRequestHeaders.js";
import { BROWSER_ARGS, closeBrowser } from "../../helpers/replay.js";

/** The HTTP client's own headers, not browserRequestHeaders()'s. */
const CLIENT_HEADERS = new Set(["host", "connection"]);

type Named = Omit<BrowserRequest, "referrer">;

interface Recorder {
  server: http.Server;
  port: number;
}

/** Every server records the first request for each URL (host and path), raw header order kept. */
const received = new Map<string, [string, string][]>();

/** A stylesheet naming an @import and an image, both resolved against the stylesheet's URL. */
const SHEET_CSS = "@import url(/imported.css); body { background: url(/sheet-bg.png) }";

function startServer(page: (origin: string) => string | undefined, tls?: { key: string; cert: string }): Promise<Recorder> {
  const scheme = tls ? "https" : "http";
  const handler: http.RequestListener = (request, response) => {
    const url = `${scheme}://${request.headers.host}${request.url}`;
    if (!received.has(url)) {
      const pairs: [string, string][] = [];
      for (let i = 0; i < request.rawHeaders.length; i += 2) pairs.push([request.rawHeaders[i]!, request.rawHeaders[i + 1]!]);
      received.set(url, pairs.filter(([name]) => !CLIENT_HEADERS.has(name.toLowerCase())));
    }
    const html = page(`${scheme}://${request.headers.host}`);
    const pathname = new URL(url).pathname;
    if (pathname === "/sheet.css") {
      response.writeHead(200, { "content-type": "text/css" }).end(SHEET_CSS);
      return;
    }
    if (html !== undefined && pathname.endsWith("page.html")) {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
      return;
    }
    const type = pathname.endsWith(".css") ? "text/css" : pathname.endsWith(".js") ? "text/javascript" : pathname.endsWith(".html") ? "text/html" : "application/octet-stream";
    response.writeHead(200, { "content-type": type, "access-control-allow-origin": "*" }).end(type === "text/html" ? "<p>frame</p>" : "");
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

/** What each page names, each with the request browserRequestHeaders() is asked about. */
function requisites(self: string, sameSite: string, crossSite: string, insecure: string): [string, Named][] {
  return [
    [`${self}/img.png`, { url: "", kind: "image" }],
    [`${self}/style.css`, { url: "", kind: "stylesheet" }],
    [`${self}/classic.js`, { url: "", kind: "script" }],
    [`${self}/module.js`, { url: "", kind: "script", cors: true }],
    [`${self}/face.woff`, { url: "", kind: "font" }],
    [`${self}/frame.html`, { url: "", kind: "frame" }],
    [`${self}/icon.png`, { url: "", kind: "icon" }],
    [`${self}/app.webmanifest`, { url: "", kind: "manifest" }],
    [`${self}/hero.png`, { url: "", kind: "preload", destination: "image" }],
    [`${self}/pre.woff2`, { url: "", kind: "preload", destination: "font" }],
    [`${self}/modpre.js`, { url: "", kind: "preload", destination: "script", cors: true }],
    [`${self}/movie.mp4`, { url: "", kind: "media" }],
    [`${self}/sound.mp3`, { url: "", kind: "media", destination: "audio" }],
    [`${self}/object.svg`, { url: "", kind: "other" }],
    [`${sameSite}/img.png`, { url: "", kind: "image" }],
    [`${sameSite}/style.css`, { url: "", kind: "stylesheet" }],
    [`${sameSite}/classic.js`, { url: "", kind: "script" }],
    [`${sameSite}/module.js`, { url: "", kind: "script", cors: true }],
    [`${sameSite}/face.woff`, { url: "", kind: "font" }],
    [`${sameSite}/frame.html`, { url: "", kind: "frame" }],
    [`${sameSite}/sheet.css`, { url: "", kind: "stylesheet" }],
    [`${crossSite}/img.png`, { url: "", kind: "image" }],
    [`${crossSite}/module.js`, { url: "", kind: "script", cors: true }],
    [`${crossSite}/face.woff`, { url: "", kind: "font" }],
    [`${crossSite}/frame.html`, { url: "", kind: "frame" }],
    [`${insecure}/img.png`, { url: "", kind: "image" }],
    [`${insecure}/classic.js`, { url: "", kind: "script" }],
    [`${insecure}/module.js`, { url: "", kind: "script", cors: true }],
    [`${insecure}/frame.html`, { url: "", kind: "frame" }],
  ];
}

/** What the https page names: itself, and loopback over http (trustworthy, so not mixed content), a downgrade. */
function httpsRequisites(self: string, loopback: string): [string, Named][] {
  return [
    [`${self}/img.png`, { url: "", kind: "image" }],
    [`${self}/module.js`, { url: "", kind: "script", cors: true }],
    [`${self}/frame.html`, { url: "", kind: "frame" }],
    [`${loopback}/from-https.png`, { url: "", kind: "image" }],
    [`${loopback}/from-https.html`, { url: "", kind: "frame" }],
  ];
}

function pageHtml(named: [string, Named][]): string {
  const tag = ([url, request]: [string, Named]): string => {
    switch (request.destination ?? request.kind) {
      case "image": return `<img src="${url}">`;
      case "stylesheet": return `<link rel="stylesheet" href="${url}">`;
      case "script": return request.cors ? `<script type="module" src="${url}"></script>` : `<script src="${url}"></script>`;
      case "font": return `<style>@font-face { font-family: F${named.findIndex(([u]) => u === url)}; src: url(${url}) }</style><span style="font-family: F${named.findIndex(([u]) => u === url)}">x</span>`;
      case "frame": return `<iframe src="${url}"></iframe>`;
      case "icon": return `<link rel="icon" href="${url}">`;
      case "manifest": return `<link rel="manifest" href="${url}">`;
      case "media": return `<video src="${url}"></video>`;
      case "audio": return `<audio src="${url}"></audio>`;
      case "other": return `<object data="${url}"></object>`;
      case "preload": return "";
      default: throw new Error(`no tag for ${url}`);
    }
  };
  const preload = (file: string, attributes: string) => {
    const url = named.find(([u]) => u.endsWith(file))?.[0];
    return url ? `<link ${attributes} href="${url}">` : "";
  };
  // Icons and the manifest count only in <head>.
  const head = [preload("/hero.png", 'rel="preload" as="image"'), preload("/pre.woff2", 'rel="preload" as="font" crossorigin'), preload("/modpre.js", 'rel="modulepreload"')];
  const inHead = (request: Named) => request.kind === "icon" || request.kind === "manifest";
  head.push(...named.filter(([, request]) => inHead(request)).map(tag));
  const body = named.filter(([, request]) => !inHead(request)).map(tag);
  return `<!doctype html><html><head><meta charset="utf-8"><title>headers</title>${head.join("")}</head><body>${body.join("\n")}</body></html>`;
}

describe("browserRequestHeaders against Chromium", () => {
  let main: Recorder;
  let second: Recorder;
  let tls: Recorder;
  let browser: Browser;
  let workDir: string;
  beforeAll(async () => {
    main = await startServer((origin) => {
      const port = new URL(origin).port;
      if (origin.startsWith("http://127.0.0.1:")) return pageHtml(requisites(origin, `http://127.0.0.1:${second.port}`, `http://other.localhost:${port}`, `http://other.test:${port}`));
      // The non-trustworthy page: its same-origin requisites.
      return pageHtml(requisites(`${origin}/own`, origin, origin, origin).slice(0, 4));
    });
    second = await startServer(() => undefined);
    workDir = await mkdtemp(path.join(os.tmpdir(), "static-headers-"));
    const authority = await createTestAuthority(workDir);
    tls = await startServer((origin) => pageHtml(httpsRequisites(origin, `http://127.0.0.1:${main.port}`)), await authority.certificateFor("secure.test"));
    const resolver = BROWSER_ARGS.find((arg) => arg.startsWith("--host-resolver-rules="))!;
    const args = [
      ...BROWSER_ARGS.filter((arg) => arg !== resolver),
      resolver.replace("=", "=MAP other.test 127.0.0.1, MAP other.localhost 127.0.0.1, MAP secure.test 127.0.0.1, "),
      `--ignore-certificate-errors-spki-list=${authority.spkiHashes.join(",")}`,
    ];
    browser = await puppeteer.launch({ executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, userDataDir: path.join(workDir, "profile"), args });
  });
  afterAll(async () => {
    await closeBrowser(browser);
    await rm(workDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    for (const recorder of [main, second, tls]) await new Promise((resolve) => recorder.server.close(resolve));
  });

  /** Loads the page and waits until every URL it names has reached a server (the icon and manifest come late). */
  async function load(pageUrl: string, named: string[], referer?: string): Promise<void> {
    const tab = await browser.newPage();
    await tab.goto(pageUrl, { waitUntil: "networkidle0", ...(referer ? { referer } : {}) });
    for (let waited = 0; waited < 10_000 && named.some((url) => !received.has(url)); waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
    await tab.close();
  }

  it("the navigation and every requisite, same-origin, same-site, cross-site, https: exactly Chromium's headers in its order", { timeout: 45_000 }, async () => {
    const userAgent = await browser.userAgent();
    const identity = { userAgent };
    const secure = `http://127.0.0.1:${main.port}`;
    const sameSite = `http://127.0.0.1:${second.port}`;
    const insecure = `http://other.test:${main.port}`;
    const tlsOrigin = `https://secure.test:${tls.port}`;
    const securePage = `${secure}/page.html`;
    const insecurePage = `${insecure}/page.html`;
    const tlsPage = `${tlsOrigin}/page.html`;
    const secureNamed = requisites(secure, sameSite, `http://other.localhost:${main.port}`, insecure);
    const insecureNamed = requisites(`${insecure}/own`, insecure, insecure, insecure).slice(0, 4);
    const tlsNamed = httpsRequisites(tlsOrigin, secure);
    // What the same-site stylesheet names: its referrer is the stylesheet, its initiator the document's origin.
    const fromSheet: [string, Named][] = [
      [`${sameSite}/imported.css`, { url: "", kind: "stylesheet" }],
      [`${sameSite}/sheet-bg.png`, { url: "", kind: "image" }],
    ];
    await load(securePage, [...secureNamed, ...fromSheet].map(([url]) => url));
    await load(insecurePage, insecureNamed.map(([url]) => url));
    await load(tlsPage, tlsNamed.map(([url]) => url));
    // A navigation given a referrer, as a crawler following a link may: cross-site, so the referrer's origin.
    const landing = `${secure}/landing.html`;
    const linkingPage = `http://other.localhost:${main.port}/linking.html`;
    await load(landing, [], linkingPage);

    const expected = new Map<string, [string, string][]>([
      [securePage, browserRequestHeaders({ url: securePage, kind: "document" }, identity)],
      [insecurePage, browserRequestHeaders({ url: insecurePage, kind: "document" }, identity)],
      [tlsPage, browserRequestHeaders({ url: tlsPage, kind: "document" }, identity)],
      [landing, browserRequestHeaders({ url: landing, kind: "document", referrer: linkingPage }, identity)],
    ]);
    for (const [url, request] of secureNamed) expected.set(url, browserRequestHeaders({ ...request, url, referrer: securePage }, identity));
    for (const [url, request] of insecureNamed) expected.set(url, browserRequestHeaders({ ...request, url, referrer: insecurePage }, identity));
    for (const [url, request] of tlsNamed) expected.set(url, browserRequestHeaders({ ...request, url, referrer: tlsPage }, identity));
    for (const [url, request] of fromSheet) expected.set(url, browserRequestHeaders({ ...request, url, referrer: `${sameSite}/sheet.css`, initiatorOrigin: secure }, identity));

    const got = new Map([...expected.keys()].map((url) => [url, received.get(url)]));
    expect(got).toEqual(expected);
    // What was checked, so a wrong module cannot pass by agreeing with itself on nothing.
    expect(expected.get(securePage)?.map(([name]) => name)).toEqual([
      "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "Upgrade-Insecure-Requests", "User-Agent", "Accept",
      "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-User", "Sec-Fetch-Dest", "Accept-Encoding", "Accept-Language",
    ]);
    expect(Object.fromEntries(expected.get(`${secure}/module.js`)!)).toMatchObject({ Origin: secure, "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "script", Referer: securePage });
    expect(Object.fromEntries(expected.get(`http://other.localhost:${main.port}/img.png`)!)).toMatchObject({ "Sec-Fetch-Site": "cross-site", Referer: `${secure}/` });
    expect(Object.fromEntries(expected.get(`${sameSite}/img.png`)!)).toMatchObject({ "Sec-Fetch-Site": "same-site", Referer: `${secure}/` });
    expect(Object.fromEntries(expected.get(`${sameSite}/imported.css`)!)).toMatchObject({ "Sec-Fetch-Site": "same-site", Referer: `${sameSite}/sheet.css` });
    expect(expected.get(`${secure}/from-https.png`)?.map(([name]) => name)).not.toContain("Referer");
    expect(Object.fromEntries(expected.get(landing)!)).toMatchObject({ "Sec-Fetch-Site": "none", "Sec-Fetch-User": "?1", Referer: `http://other.localhost:${main.port}/` });
    expect(expected.size).toBe(44);
  });
});
