import type { ServerResponse } from "node:http";
import type { HostileRoutes } from "./route.js";

/** Routes for the live view (--screencastPort): pages slow enough to be watched, and one that fails. */
const P = "/hostile/live";

/** How many slow pages the index links to. */
export const LIVE_SLOW_PAGES = 8;

export const LIVE = {
  /** Links to every slow page and to the failing one. */
  index: `${P}/index.html`,
  /** A coloured page whose image arrives 3 s late: the load event waits for it, so the page stays on screen a few seconds. */
  slow: (n: number) => `${P}/slow-${n}.html`,
  slowImage: (n: number) => `${P}/slow-${n}.png`,
  /** Answers 500: with --failOnInvalidStatus a failed page, and a warning in the log. */
  failing: `${P}/failing.html`,
} as const;

const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex",
);

const html = (res: ServerResponse, status: number, body: string) =>
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(`<!doctype html><html>${body}</html>`);

const slowPage = (n: number) =>
  `<title>slow ${n}</title><body style="margin:0;background:hsl(${(n * 47) % 360},70%,60%)"><h1 style="font:bold 64px sans-serif;padding:40px">slow page ${n}</h1>` +
  `<img src="${LIVE.slowImage(n)}" width="1" height="1"><a href="${LIVE.index}">index</a></body>`;

export const liveViewRoutes: HostileRoutes = {
  [LIVE.index]: (_req, res) =>
    html(res, 200, `<title>live index</title><body><h1>live view fixture</h1>` +
      Array.from({ length: LIVE_SLOW_PAGES }, (_, i) => `<a href="${LIVE.slow(i + 1)}">slow ${i + 1}</a> `).join("") +
      `<a href="${LIVE.failing}">failing</a></body>`),
  [LIVE.failing]: (_req, res) => html(res, 500, `<title>failing</title><body>server error</body>`),
  ...Object.fromEntries(Array.from({ length: LIVE_SLOW_PAGES }, (_, i) => [
    [LIVE.slow(i + 1), ((_req, res) => html(res, 200, slowPage(i + 1))) as HostileRoutes[string]],
    [LIVE.slowImage(i + 1), ((_req, res) => void setTimeout(() => res.writeHead(200, { "content-type": "image/png" }).end(PNG), 3000)) as HostileRoutes[string]],
  ]).flat()),
};
