import { execFile } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { promisify } from "node:util";

/** One request the site saw: which program's socket it came over (ss -p: tinyproxy, microsocks, sshd, chromium, node). */
export interface SiteRequest {
  method: string;
  path: string;
  range: string | null;
  /** Sent with If-None-Match (a --refresh crawl's conditional request). */
  conditional: boolean;
  peer: string;
}

export interface ProxySite {
  /** http://<name>:<port> (name: the host, or a CRAWLER_TEST_HOSTS name for it) */
  origin: string;
  host: string;
  port: number;
  requests: SiteRequest[];
  /** HTML a test adds to the home page (/), e.g. links to URLs the crawl must refuse. */
  homeExtras: string[];
  close(): Promise<void>;
}

const CLIP = Buffer.alloc(4096, 7);
const ETAG = '"v1"';

/**
 * A small site for proxy tests, on a loopback address of its own. Each connection's other end is looked
 * up with `ss -p` (as root), so a test can tell a request relayed by a proxy from one the crawler or
 * Chromium sent directly: every request records the name of the process that opened its connection.
 *
 *   /robots.txt       allows everything, names /sitemap.xml
 *   /sitemap.xml      lists /from-sitemap.html (linked from nowhere)
 *   /                 an image, a stylesheet, a link to /page2.html, a script's range request for /clip.mp4
 *   /clip.mp4         206 to a Range request: the crawler then fetches it whole itself (a direct fetch)
 */
export async function startProxySite(host: string, name = host): Promise<ProxySite> {
  const requests: SiteRequest[] = [];
  const sockets = new Set<Socket>();
  const peers = new WeakMap<Socket, Promise<string>>();
  let origin = "";
  const homeExtras: string[] = [];
  const html = (body: string) => `<!doctype html><html><head><title>t</title><link rel="stylesheet" href="/style.css"></head><body>${body}</body></html>`;
  const routes: Record<string, () => [string, string | Buffer]> = {
    "/robots.txt": () => ["text/plain", `User-agent: *\nAllow: /\n\nSitemap: ${origin}/sitemap.xml\n`],
    "/sitemap.xml": () => ["application/xml", `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${origin}/from-sitemap.html</loc></url></urlset>\n`],
    "/": () => ["text/html", html(`<img src="/img.png"><a href="/page2.html">2</a><script>fetch("/clip.mp4", { headers: { Range: "bytes=0-" } });</script>${homeExtras.join("")}`)],
    "/page2.html": () => ["text/html", html(`<p>two</p><a href="/">home</a>`)],
    "/from-sitemap.html": () => ["text/html", html(`<p>only in the sitemap</p>`)],
    "/style.css": () => ["text/css", "body { color: #333 }"],
    "/img.png": () => ["image/png", Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64")],
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const peer = await (peers.get(req.socket) ?? Promise.resolve("unknown"));
      // A proxy that forwards a name to this site as its upstream (tinyproxy's Upstream rule) sends the
      // request line in absolute form: the path is what counts.
      const path = /^https?:\/\//.test(req.url ?? "") ? new URL(req.url!).pathname : (req.url ?? "/");
      const range = req.headers.range ?? null;
      const conditional = req.headers["if-none-match"] !== undefined;
      requests.push({ method: req.method ?? "GET", path, range, conditional, peer });
      if (path === "/clip.mp4") {
        if (range) {
          res.writeHead(206, { "content-type": "video/mp4", "content-range": `bytes 0-${CLIP.length - 1}/${CLIP.length}`, "accept-ranges": "bytes" }).end(CLIP);
        } else {
          res.writeHead(200, { "content-type": "video/mp4", "accept-ranges": "bytes" }).end(CLIP);
        }
        return;
      }
      const route = routes[path];
      if (!route) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      const [type, body] = route();
      // Pages carry an ETag, so that a --refresh crawl asks for them conditionally (and gets a 304).
      if (type === "text/html" && req.headers["if-none-match"] === ETAG) return void res.writeHead(304, { etag: ETAG }).end();
      res.writeHead(200, { "content-type": type, ...(type === "text/html" ? { etag: ETAG } : {}) }).end(body);
    })();
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    peers.set(socket, peerProcess(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  origin = `http://${name}:${port}`;
  return {
    origin,
    host,
    port,
    requests,
    homeExtras,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The name of the process holding the other end of an accepted loopback connection. */
async function peerProcess(socket: Socket): Promise<string> {
  const filter = `src ${socket.remoteAddress}:${socket.remotePort} dst ${socket.localAddress}:${socket.localPort}`;
  try {
    const { stdout } = await promisify(execFile)("ss", ["-Htnp", "state", "established", ...filter.split(" ")]);
    return /users:\(\("([^"]+)"/.exec(stdout)?.[1] ?? "unknown";
  } catch {
    return "unknown";
  }
}
