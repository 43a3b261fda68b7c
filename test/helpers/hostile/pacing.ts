import type { IncomingMessage, ServerResponse } from "node:http";
import type { HostileRoutes, HostileSiteInfo } from "./route.js";

/**
 * Hostile routes: pacing and page identity.
 * - rate limits: a page that answers 429 (Retry-After: 2) once, then 200; one that always answers 429
 *   (Retry-After: 1); a crowd of eight pages on one host whose first answers 429 (Retry-After: 8)
 *   once; every request to them is logged with its time (pacingLog), so a test can measure the gaps
 *   the crawler left.
 * - redirecting seeds: /moved-www sends its visitors to the www. host, /moved-away to another host
 *   (names under .localhost, which Chromium resolves to the loopback address itself); both land on a
 *   three-page site that links back to its own front page.
 * - query-order twins: one page linking the same pages under reordered queries, an empty "?", and
 *   #fragments.
 */
const P = "/hostile/pacing";

/** Requests to the rate-limited routes, per site, in the order they came. */
const requestLog = new Map<string, { path: string; at: number }[]>();

export function pacingLog(siteUrl: string, path: string | RegExp): number[] {
  const matches = (p: string) => (typeof path === "string" ? p === path : path.test(p));
  return (requestLog.get(siteUrl) ?? []).filter((r) => matches(r.path)).map((r) => r.at);
}

/** The same requests with their paths. */
export function pacingRequests(siteUrl: string, path: RegExp): { path: string; at: number }[] {
  return (requestLog.get(siteUrl) ?? []).filter((r) => path.test(r.path));
}

function logRequest(req: IncomingMessage, site: HostileSiteInfo): number {
  const path = new URL(req.url ?? "/", "http://x").pathname;
  const log = requestLog.get(site.url) ?? [];
  requestLog.set(site.url, log);
  log.push({ path, at: Date.now() });
  return log.filter((r) => r.path === path).length;
}

function html(res: ServerResponse, body: string, status = 200, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", ...headers }).end(`<!doctype html><html><head><title>${status}</title></head><body>${body}</body></html>`);
}

const links = (hrefs: string[]) => hrefs.map((h) => `<a href="${h}">${h}</a>`).join(" ");

/** The page a rate limit sends: what a replay must never show as the page, with a link and an image that must not be fetched. */
const TOO_MANY = `<h1>Too many requests</h1>${links([`${P}/never-linked`])}<img src="${P}/never-loaded.png">`;

/** The same host with "www." in front (seed.localhost:1234 -> www.seed.localhost:1234). */
const wwwHostOf = (req: IncomingMessage) => `www.${req.headers.host ?? ""}`;
const otherHostOf = (req: IncomingMessage) => `other.localhost:${(req.headers.host ?? "").split(":")[1] ?? ""}`;

export const pacingRoutes: HostileRoutes = {
  [`${P}/busy`]: (req, res, site) => {
    if (logRequest(req, site) === 1) return html(res, TOO_MANY, 429, { "retry-after": "2" });
    html(res, `<h1>finally</h1>`);
  },
  [`${P}/always-busy`]: (req, res, site) => {
    logRequest(req, site);
    html(res, TOO_MANY, 429, { "retry-after": "1" });
  },
  [`${P}/busy-links`]: (_req, res) => html(res, links([`${P}/always-busy`])),
  [`${P}/crowd`]: (_req, res) => html(res, links(Array.from({ length: 8 }, (_, i) => `${P}/crowd/${i + 1}`))),
  ...Object.fromEntries(
    Array.from({ length: 8 }, (_, i) => [
      `${P}/crowd/${i + 1}`,
      (req: IncomingMessage, res: ServerResponse, site: HostileSiteInfo) => {
        const nth = logRequest(req, site);
        if (i === 0 && nth === 1) return html(res, TOO_MANY, 429, { "retry-after": "8" });
        html(res, `<p>crowd ${i + 1}</p>`);
      },
    ]),
  ),

  [`${P}/moved-www`]: (req, res) => {
    res.writeHead(301, { location: `http://${wwwHostOf(req)}${P}/site/` }).end();
  },
  [`${P}/moved-away`]: (req, res) => {
    res.writeHead(301, { location: `http://${otherHostOf(req)}${P}/site/` }).end();
  },
  [`${P}/site/`]: (_req, res) => html(res, links([`${P}/site/a`, `${P}/site/b`, `${P}/site/`])),
  [`${P}/site/a`]: (_req, res) => html(res, links([`${P}/site/`, `${P}/site/b`])),
  [`${P}/site/b`]: (_req, res) => html(res, links([`${P}/site/`, `${P}/site/a`])),

  [`${P}/twins`]: (_req, res) =>
    html(res, links([
      `${P}/item?b=2&a=1`, `${P}/item?a=1&b=2`, `${P}/item?b=2&&a=1&`, `${P}/item?a=1&b=2#part`,
      `${P}/plain?`, `${P}/plain`,
      `${P}/frag#one`, `${P}/frag#two`, `${P}/frag`,
    ])),
  [`${P}/item`]: (req, res) => html(res, `<p>item ${new URL(req.url ?? "/", "http://x").search}</p>`),
  [`${P}/plain`]: (_req, res) => html(res, `<p>plain</p>`),
  [`${P}/frag`]: (_req, res) => html(res, `<h2 id="one">one</h2><h2 id="two">two</h2>`),
};
