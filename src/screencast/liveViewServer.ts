import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { errorMessage, logger } from "../log/logger.js";
import type { ViewerHub } from "./viewerHub.js";

/** The page's path and its stream's (browsertrix-crawler's: the page at /, its WebSocket at /ws). */
export const PAGE_PATH = "/";
export const STREAM_PATH = "/ws";

/** The page (src/screencast/liveView.html), read once: next to this module in src/, or from dist/src/screencast/ back to src/screencast/. */
function livePage(): string {
  for (const rel of ["./liveView.html", "../../../src/screencast/liveView.html"]) {
    try {
      return readFileSync(new URL(rel, import.meta.url), "utf8");
    } catch {
      // the next candidate
    }
  }
  throw new Error("src/screencast/liveView.html is missing");
}

/**
 * On loopback, only a page of the live view itself may ask: the Host must be a loopback name (a DNS
 * rebinding page on another name is refused) and a browser's Origin, when sent, that same host (another
 * site's page open in the same browser must not read the crawl through a WebSocket, which no same-origin
 * rule protects). Listening elsewhere (SCREENCAST_HOST), whatever proxies it decides.
 */
function allowed(headers: { host?: string; origin?: string }, loopback: boolean): boolean {
  if (!loopback) return true;
  const host = headers.host ?? "";
  if (!/^(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d+)?$/i.test(host)) return false;
  return headers.origin === undefined || headers.origin.toLowerCase() === `http://${host.toLowerCase()}`;
}

const isLoopback = (host: string): boolean => host === "localhost" || host === "::1" || host.startsWith("127.");

/**
 * --screencastPort: an HTTP server that serves the live view's page at / and its WebSocket at /ws, and
 * nothing else (404). It listens on 127.0.0.1 unless SCREENCAST_HOST names another address (e.g. 0.0.0.0
 * in a container whose port is published, as the Browsertrix service's crawler pods are reached).
 */
export class LiveViewServer {
  private constructor(
    private readonly server: Server,
    private readonly sockets: WebSocketServer,
    readonly host: string,
    readonly port: number,
  ) {}

  static start(port: number, hub: ViewerHub, host = process.env.SCREENCAST_HOST || "127.0.0.1"): Promise<LiveViewServer> {
    const page = livePage();
    const sockets = new WebSocketServer({ noServer: true, maxPayload: 4096 });
    const loopback = isLoopback(host);
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (!allowed(req.headers, loopback)) return void res.writeHead(403, { "content-type": "text/plain" }).end("forbidden\n");
      if (path !== PAGE_PATH || (req.method !== "GET" && req.method !== "HEAD")) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" }).end(req.method === "HEAD" ? undefined : page);
    });
    server.on("upgrade", (req, socket, head) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path !== STREAM_PATH) return void socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
      if (!allowed(req.headers, loopback)) return void socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
      sockets.handleUpgrade(req, socket, head, (ws) => hub.add(ws));
    });
    return new Promise((resolve, reject) => {
      server.once("error", (err: NodeJS.ErrnoException) => {
        const why = err.code === "EADDRINUSE" ? "the port is in use" : err.code === "EACCES" ? "not allowed to listen on it" : err.code === "EADDRNOTAVAIL" ? `no address ${host} here` : errorMessage(err);
        reject(new Error(`--screencastPort ${port}: cannot serve the live view on ${host}: ${why}`));
      });
      server.listen(port, host, () => {
        server.removeAllListeners("error");
        server.on("error", (err) => logger.warn("screencast", "live view server error", { error: errorMessage(err) }));
        const bound = (server.address() as AddressInfo).port;
        resolve(new LiveViewServer(server, sockets, host, bound));
      });
    });
  }

  get url(): string {
    return `http://${this.host.includes(":") ? `[${this.host}]` : this.host}:${this.port}${PAGE_PATH}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.sockets.close();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
