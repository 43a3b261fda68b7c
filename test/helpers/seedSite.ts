import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { listenOnLoopback } from "../../fixtures/loopback.js";

/** What the site's /robots.txt answers. */
export type RobotsVariant = "rules" | "rules-without-sitemap" | 404 | 503;

export interface SeedSite {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** The crawl's seed. */
  seed: string;
  /** Paths requested, in order (query strings kept). */
  requests: string[];
  hits(path: string): number;
  close(): Promise<void>;
}

/**
 * A small site on 127.0.0.1 for sitemap and robots.txt crawls. The seed /site/ links only to
 * /site/linked.html and /site/private/linked.html; the pages under /site/from-sitemap/ are reachable only
 * through the sitemaps:
 *
 *   /robots.txt                 User-agent: * -> Disallow: /   and   User-agent: warc-crawler -> Disallow: /site/private/
 *                               Sitemap: /sitemap-index.xml ("rules"; "rules-without-sitemap" has no Sitemap: line)
 *   /sitemap-index.xml          -> /sitemaps/pages.xml (lastmod 2024-03-05), /sitemaps/more.xml.gz (no lastmod),
 *                                  /sitemaps/old.xml (lastmod 2022-01-01)
 *   /sitemaps/pages.xml         sent with Content-Encoding: gzip: a (2024-01-10), b (2024-03-05T12:00:00+00:00),
 *                               undated, the seed (2024-02-15), /elsewhere/listed.html (2024-02-01, out of scope),
 *                               http://example.invalid/page.html (out of scope)
 *   /sitemaps/more.xml.gz       a gzip file: c (2023-06-01), /site/private/listed.html (2024-02-01)
 *   /sitemaps/old.xml           old (2021-12-01)
 *   /sitemap.xml                a plain urlset: fallback (no lastmod)
 */
export async function startSeedSite(robots: RobotsVariant = "rules"): Promise<SeedSite> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  let origin = "";

  const urlset = (entries: [string, string?][]) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n` +
    entries.map(([loc, lastmod]) => `  <url><loc>${loc.startsWith("http") ? loc : origin + loc}</loc>${lastmod ? `<lastmod>${lastmod}</lastmod>` : ""}</url>\n`).join("") +
    `</urlset>\n`;
  const page = (path: string, links: string[] = []) =>
    `<!doctype html><html><head><title>${path}</title></head><body><h1>${path}</h1>${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</body></html>`;

  const routes = (): Record<string, () => { type: string; body: string | Buffer; encoding?: "gzip" } | null> => ({
    "/robots.txt": () =>
      typeof robots === "number" ? null : {
        type: "text/plain",
        body: "User-agent: *\nDisallow: /\n\nUser-agent: warc-crawler\nDisallow: /site/private/\n" + (robots === "rules" ? `\nSitemap: ${origin}/sitemap-index.xml\n` : ""),
      },
    "/sitemap-index.xml": () => ({
      type: "application/xml",
      body:
        `<?xml version="1.0" encoding="UTF-8"?>\n<!-- a comment before the root element -->\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n` +
        `  <sitemap><loc>${origin}/sitemaps/pages.xml</loc><lastmod>2024-03-05</lastmod></sitemap>\n` +
        `  <sitemap><loc>${origin}/sitemaps/more.xml.gz</loc></sitemap>\n` +
        `  <sitemap><loc>${origin}/sitemaps/old.xml</loc><lastmod>2022-01-01</lastmod></sitemap>\n` +
        `</sitemapindex>\n`,
    }),
    "/sitemaps/pages.xml": () => ({
      type: "application/xml",
      encoding: "gzip",
      body: gzipSync(urlset([
        ["/site/from-sitemap/a.html", "2024-01-10"],
        ["/site/from-sitemap/b.html", "2024-03-05T12:00:00+00:00"],
        ["/site/from-sitemap/undated.html"],
        ["/site/", "2024-02-15"],
        ["/elsewhere/listed.html", "2024-02-01"],
        ["http://example.invalid/page.html"],
      ])),
    }),
    "/sitemaps/more.xml.gz": () => ({
      type: "application/gzip",
      body: gzipSync(urlset([["/site/from-sitemap/c.html", "2023-06-01"], ["/site/private/listed.html", "2024-02-01"]])),
    }),
    "/sitemaps/old.xml": () => ({ type: "application/xml", body: urlset([["/site/from-sitemap/old.html", "2021-12-01"]]) }),
    "/sitemap.xml": () => ({ type: "application/xml", body: urlset([["/site/from-sitemap/fallback.html"]]) }),
    "/site/": () => ({ type: "text/html", body: page("/site/", ["/site/linked.html", "/site/private/linked.html"]) }),
  });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? "/";
    requests.push(path);
    const route = routes()[path];
    const found = route ? route() : /^\/(site|elsewhere)\/[\w/-]+\.html$/.test(path) ? { type: "text/html", body: page(path, ["/site/"]) } : null;
    if (!found) {
      if (path === "/robots.txt" && robots === 503) res.writeHead(503, { "content-type": "text/plain" }).end("busy");
      else res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": found.type, ...(found.encoding ? { "content-encoding": found.encoding } : {}) }).end(found.body);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  origin = (await listenOnLoopback(server)).url;
  return {
    origin,
    seed: `${origin}/site/`,
    requests,
    hits: (path) => requests.filter((r) => r === path).length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
