// A plain static file server on loopback for benchmarks (a folder such as Debian's rust-doc HTML), answering
// as nginx does: Last-Modified and ETag, 304 to a matching If-None-Match / If-Modified-Since, no Cache-Control
// (so a browser caches by heuristic freshness). Counts the requests that reach it.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer } from "node:http";
import { join, normalize, sep } from "node:path";
import { listenOnLoopback } from "../../fixtures/loopback.js";
import { contentTypeFor } from "../../fixtures/http-range.js";

export interface StaticSite {
  url: string;
  /** Requests received, and how many were answered 304. */
  requests: number;
  notModified: number;
  resetCounters(): void;
  close(): Promise<void>;
}

export async function startStaticSite(root: string): Promise<StaticSite> {
  const counters = { requests: 0, notModified: 0 };
  const server = createServer((req, res) => {
    counters.requests += 1;
    const pathname = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const file = normalize(join(root, pathname.endsWith("/") ? `${pathname}index.html` : pathname));
    if (!file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    stat(file).then((info) => {
      if (!info.isFile()) throw new Error("not a file");
      const etag = `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
      const lastModified = info.mtime.toUTCString();
      if (req.headers["if-none-match"] === etag || (!req.headers["if-none-match"] && req.headers["if-modified-since"] === lastModified)) {
        counters.notModified += 1;
        res.writeHead(304, { ETag: etag, "Last-Modified": lastModified }).end();
        return;
      }
      res.writeHead(200, { "Content-Type": contentTypeFor(file), "Content-Length": info.size, ETag: etag, "Last-Modified": lastModified });
      createReadStream(file).pipe(res);
    }).catch(() => {
      // Missing, a folder, or a link to nothing (python3.11-doc's _static/jquery.js without libjs-jquery): not found.
      res.writeHead(404, { "Content-Type": "text/html" }).end("<!doctype html><title>404</title><p>Not found</p>");
    });
  });
  const listener = await listenOnLoopback(server, 0);
  return {
    url: listener.url,
    get requests() {
      return counters.requests;
    },
    get notModified() {
      return counters.notModified;
    },
    resetCounters() {
      counters.requests = 0;
      counters.notModified = 0;
    },
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
