import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";

export interface VersionedSiteOptions {
  pages: number;
  /** Fraction of pages whose content changes in version 2 (default 0.2). */
  changedFraction?: number;
  /** Pages deleted in version 2 (404 then) and pages added (linked from changed pages). */
  deleted?: number;
  added?: number;
  /** Query aliases of unchanged pages (truth.aliases): URLs whose payload another URL has. */
  aliases?: boolean;
}

/** A URL serving the very bytes of another page (`of`), as a search page does for an empty query. */
export interface PageAlias {
  path: string;
  of: string;
}

export interface VersionedSite {
  url: string;
  version: 1 | 2;
  setVersion(version: 1 | 2): void;
  bytesServed: number;
  requests: number;
  resetCounters(): void;
  /** The true differences between version 1 and 2, as page paths. */
  truth: {
    unchanged: string[];
    changed: string[];
    gone: string[];
    added: string[];
    redirects: { unchanged: string[]; changed: string[] };
    /** Aliases linked in both versions (unchanged), and linked in version 2 only (added). */
    aliases: { unchanged: PageAlias[]; added: PageAlias[] };
  };
  close(): Promise<void>;
}

/**
 * A loopback site with two versions, answering conditional requests (ETag, Last-Modified -> 304).
 * Page i links to pages 2i+1 and 2i+2 (a binary tree from /v/page/0.html), loads a shared stylesheet
 * and its own image. Version 2 changes some pages, deletes some leaves (their parents stay unchanged,
 * so the links come from archived outlinks) and adds pages linked only from changed pages that are
 * reached through unchanged ones. Page 1 also links (after its children) to two redirects: /v/page/old-page,
 * a 301 to page 3 in both versions, and /v/page/moved, a 301 to page 1 in version 1 and to page 2 in version 2;
 * their targets are crawled before them, so following a redirect fetches nothing a page needs itself.
 * With `aliases`, the query is ignored as a search page ignores an empty query: the first unchanged page u
 * links (last) to u.html?q=, which serves u's bytes (so a crawl stores u first and the alias as a revisit of
 * it), and in version 2 the first changed page also links to v.html?added=, v the next unchanged page.
 */
export async function startVersionedSite(options: VersionedSiteOptions): Promise<VersionedSite> {
  const n = options.pages;
  const deletedCount = options.deleted ?? Math.max(1, Math.round(n * 0.1));
  const addedCount = options.added ?? Math.max(1, Math.round(n * 0.1));
  const deleted = new Set(Array.from({ length: deletedCount }, (_, i) => n - 1 - i));
  const candidates = Array.from({ length: n }, (_, i) => i).filter((i) => i > 0 && !deleted.has(i) && !deleted.has(2 * i + 1) && !deleted.has(2 * i + 2));
  const changedCount = Math.max(1, Math.round(n * (options.changedFraction ?? 0.2)));
  const step = candidates.length / changedCount;
  const changed = new Set(Array.from({ length: changedCount }, (_, k) => candidates[Math.floor(k * step + step / 2)]));
  const changedList = [...changed];
  const added = Array.from({ length: addedCount }, (_, k) => ({ id: n + k, parent: changedList[k % changedList.length] }));

  const unchangedIds = Array.from({ length: n }, (_, i) => i).filter((i) => i > 0 && !changed.has(i) && !deleted.has(i));
  const aliasPaths = (id: number | undefined, query: string): PageAlias[] => (options.aliases && id !== undefined ? [{ path: `/v/page/${id}.html?${query}`, of: `/v/page/${id}.html` }] : []);
  const aliases = { unchanged: aliasPaths(unchangedIds[0], "q="), added: aliasPaths(unchangedIds[1], "added=") };

  const page = (path: string) => new URL(path, "http://x").pathname;
  const site: VersionedSite = {
    url: "",
    version: 1,
    setVersion: (v) => (site.version = v),
    bytesServed: 0,
    requests: 0,
    resetCounters: () => ((site.bytesServed = 0), (site.requests = 0)),
    truth: {
      unchanged: Array.from({ length: n }, (_, i) => i).filter((i) => !changed.has(i) && !deleted.has(i)).map((i) => `/v/page/${i}.html`),
      changed: [...changed].map((i) => `/v/page/${i}.html`),
      gone: [...deleted].map((i) => `/v/page/${i}.html`),
      added: added.map((a) => `/v/page/${a.id}.html`),
      redirects: n > 4 ? { unchanged: ["/v/page/old-page"], changed: ["/v/page/moved"] } : { unchanged: [], changed: [] },
      aliases,
    },
    close: async () => {},
  };

  const body = (i: number): string | null => {
    const v2 = site.version === 2;
    if (i < n && v2 && deleted.has(i)) return null;
    if (i >= n && (!v2 || i >= n + addedCount)) return null;
    const children = [2 * i + 1, 2 * i + 2].filter((c) => c < n);
    const extra = v2 ? added.filter((a) => a.parent === i).map((a) => a.id) : [];
    const redirects = i === 1 ? site.truth.redirects.unchanged.concat(site.truth.redirects.changed) : [];
    const aliasLinks = [
      ...aliases.unchanged.filter((a) => a.of === `/v/page/${i}.html`),
      ...(v2 && i === changedList[0] ? aliases.added : []),
    ].map((a) => a.path);
    const links = [...children.concat(extra).map((c) => `/v/page/${c}.html`), ...redirects, ...aliasLinks].map((href) => `<a href="${href}">${href}</a>`).join(" ");
    const text = v2 && changed.has(i) ? `Version 2 text of page ${i}. UPDATED-${i}` : `Original text of page ${i}. ORIGINAL-${i}`;
    return `<!doctype html><html><head><title>Page ${i}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/v/style.css"></head>` +
      `<body><h1>Page ${i}</h1><p>${text}</p><img src="/v/img/${i}.svg"><p>${"Filler words for a realistic page size. ".repeat(60)}</p>${links}</body></html>`;
  };

  const server: Server = createServer((req, res) => {
    site.requests += 1;
    const path = page(req.url ?? "/");
    const send = (status: number, headers: Record<string, string>, content = "") => {
      const bytes = Buffer.from(content);
      site.bytesServed += bytes.length;
      res.writeHead(status, { ...headers, ...(status === 304 ? {} : { "Content-Length": String(bytes.length) }) });
      res.end(bytes);
    };
    let content: string | null = null;
    let type = "text/html; charset=utf-8";
    let match: RegExpExecArray | null;
    if (path === "/v/page/old-page" && site.truth.redirects.unchanged.length) return send(301, { Location: "/v/page/3.html" });
    if (path === "/v/page/moved" && site.truth.redirects.changed.length) return send(301, { Location: site.version === 1 ? "/v/page/1.html" : "/v/page/2.html" });
    if (path === "/v/style.css") {
      content = "body { font-family: serif; }\n".repeat(40);
      type = "text/css";
    } else if ((match = /^\/v\/img\/(\d+)\.svg$/.exec(path))) {
      content = `<svg xmlns="http://www.w3.org/2000/svg" width="60" height="60"><text y="30">${match[1]}</text>${"<!-- padding -->".repeat(40)}</svg>`;
      type = "image/svg+xml";
    } else if ((match = /^\/v\/page\/(\d+)\.html$/.exec(path))) {
      content = body(Number(match[1]));
    }
    if (content === null) return send(404, { "Content-Type": "text/html" }, "<html><body>not found</body></html>");
    const etag = `"${createHash("sha256").update(content).digest("hex").slice(0, 16)}"`;
    const lastModified = new Date(Date.UTC(2026, 0, site.version)).toUTCString();
    const headers = { "Content-Type": type, ETag: etag, "Last-Modified": lastModified, "Cache-Control": "no-cache" };
    if (req.headers["if-none-match"] === etag) return send(304, { ETag: etag, "Last-Modified": lastModified });
    send(200, headers, content);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  site.url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  site.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return site;
}
