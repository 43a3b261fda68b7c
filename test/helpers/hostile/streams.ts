import type { ServerResponse } from "node:http";
import type { HostileRoutes } from "./route.js";

/** Seconds between the SSE stream's keep-alive comments (as live tickers send them). */
export const SSE_KEEPALIVE_MS = 5000;
/** How long the long-poll endpoint holds a request before answering (then the page polls again). */
export const LONG_POLL_HOLD_MS = 20_000;
/** The pages that open a never-ending response, and the two plain pages each links to. */
export const STREAM_PAGES = ["sse", "long-poll", "endless"] as const;
export type StreamPage = (typeof STREAM_PAGES)[number];
export const streamPagePath = (name: StreamPage) => `/hostile/streams/${name}.html`;
export const streamLinkPaths = (name: StreamPage) => [1, 2].map((i) => `/hostile/streams/next/${name}-${i}.html`);
/** The first bytes each stream sends at once (what the archive must hold at least). */
export const SSE_FIRST_EVENT = "event: tick\ndata: first\n\n";
export const ENDLESS_FIRST_CHUNK = "chunk 0 of an endless body\n";

const page = (title: string, script: string, links: string[]) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><ul>${links.map((l) => `<li><a href="${l}">${l}</a></li>`).join("")}</ul><script>${script}</script></body></html>`;

const html = (res: ServerResponse, body: string) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(body);

/** A response that never ends: `tick` writes to it every `everyMs` until the client goes away. */
function forever(res: ServerResponse, everyMs: number, tick: (n: number) => string): void {
  let n = 0;
  const timer = setInterval(() => res.write(tick(++n)), everyMs);
  res.on("close", () => clearInterval(timer));
}

/**
 * Hostile routes: responses that never end. An EventSource whose server sends a keep-alive every 5 s, a
 * long-poll held 20 s at a time, and a fetch() of an endless chunked body (a line every 200 ms); each on
 * a page that links to two plain pages, which a crawl must reach.
 */
export const streamsRoutes: HostileRoutes = {
  "/hostile/streams/sse.html": (_req, res) =>
    html(res, page("sse", `const es = new EventSource("/hostile/streams/events"); es.onmessage = (e) => document.title = "sse " + e.data;`, streamLinkPaths("sse"))),
  "/hostile/streams/events": (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(SSE_FIRST_EVENT);
    forever(res, SSE_KEEPALIVE_MS, () => ": keep-alive\n\n");
  },
  "/hostile/streams/long-poll.html": (_req, res) =>
    html(res, page("long-poll", `(async () => { for (;;) { try { await (await fetch("/hostile/streams/poll")).text(); } catch { await new Promise((r) => setTimeout(r, 1000)); } } })();`, streamLinkPaths("long-poll"))),
  "/hostile/streams/poll": (_req, res) => {
    const timer = setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(`{"news":[]}`), LONG_POLL_HOLD_MS);
    res.on("close", () => clearTimeout(timer));
  },
  "/hostile/streams/endless.html": (_req, res) =>
    html(res, page("endless", `(async () => { const r = await fetch("/hostile/streams/endless"); const reader = r.body.getReader(); for (;;) { const { done } = await reader.read(); if (done) break; } })();`, streamLinkPaths("endless"))),
  "/hostile/streams/endless": (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    res.write(ENDLESS_FIRST_CHUNK);
    forever(res, 200, (n) => `chunk ${n} of an endless body\n`);
  },
  ...Object.fromEntries(
    STREAM_PAGES.flatMap((name) => streamLinkPaths(name)).map((path) => [path, (_req, res) => html(res, page(path, "", []))] as const),
  ),
};
