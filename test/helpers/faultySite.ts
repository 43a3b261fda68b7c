import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { hostileRoutes, type HostileSiteInfo } from "./hostile/index.js";

/** How one page of the faulty site misbehaves. */
export type PageFault = "error-500" | "cut-off" | "silent";

export interface FaultySite {
  url: string;
  /** Every page path the site links to (the seed "/" included). */
  pagePaths: string[];
  /** Requests received per path. */
  hits: Map<string, number>;
  close(): Promise<void>;
}

/**
 * The hostile site. A small site on 127.0.0.1 (or another loopback address: `host`) with `pages` pages (/page/1 ... linked from /), where chosen pages misbehave:
 * answer 500, declare Content-Length 100000 and close the connection after 512 bytes, or never answer.
 * Every page loads the shared stylesheet and logo, and its own /static/photo-<n>.png, whose bytes are the
 * same for every page: different URLs with one payload, so writers store revisits of each other's records.
 * Besides those pages it serves the hostile routes of ./hostile/ (never-ending streams, slow drips, huge
 * bodies, rate limits, forbidden redirects...), which tests link to from pages of their own.
 */
export async function startFaultySite(pages: number, faults: Record<string, PageFault>, host = "127.0.0.1"): Promise<FaultySite> {
  const hits = new Map<string, number>();
  const sockets = new Set<Socket>();
  const pagePaths = ["/", ...Array.from({ length: pages }, (_, i) => `/page/${i + 1}`)];
  const logo = Buffer.from(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
    "hex",
  );
  // Larger than the dedupe minimum (512 bytes); bytes after IEND are ignored by image decoders.
  const photo = Buffer.concat([logo, Buffer.alloc(2048, 7)]);
  const pageHtml = (path: string) => {
    const photoName = path === "/" ? "home" : path.split("/").pop();
    const links = path === "/" ? pagePaths.slice(1).map((p) => `<li><a href="${p}">${p}</a></li>`).join("") : `<li><a href="/">home</a></li>`;
    return `<!doctype html><html><head><title>${path}</title><link rel="stylesheet" href="/static/site.css"></head><body><h1>${path}</h1><img src="/static/logo.png" width="1" height="1"><img src="/static/photo-${photoName}.png" width="1" height="1"><ul>${links}</ul><p>${"text ".repeat(200)}</p></body></html>`;
  };

  const hostile = hostileRoutes();
  const info: HostileSiteInfo = { url: "", hits };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const hostileHandler = hostile[path];
    if (hostileHandler) return hostileHandler(req, res, info);
    const fault = faults[path];
    if (fault === "silent") return; // never answers; the socket stays open until the server closes
    if (fault === "error-500") {
      res.writeHead(500, { "content-type": "text/html" }).end(`<!doctype html><title>error</title><p>server error at ${path}</p>`);
      return;
    }
    if (fault === "cut-off") {
      res.writeHead(200, { "content-type": "text/html", "content-length": "100000" });
      res.write(Buffer.from(pageHtml(path).padEnd(512, " ").slice(0, 512)));
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    }
    if (path === "/static/site.css") {
      res.writeHead(200, { "content-type": "text/css" }).end("h1 { color: rgb(0, 128, 0); }");
      return;
    }
    if (path === "/static/logo.png") {
      res.writeHead(200, { "content-type": "image/png" }).end(logo);
      return;
    }
    if (/^\/static\/photo-[\w]+\.png$/.test(path)) {
      res.writeHead(200, { "content-type": "image/png" }).end(photo);
      return;
    }
    if (!pagePaths.includes(path)) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(pageHtml(path));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  info.url = `http://${host}:${port}`;
  return {
    url: info.url,
    pagePaths,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
