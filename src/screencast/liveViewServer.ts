import { readFileSync } from "node:fs";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { WebSocketServer } from "ws";
import { errorMessage, logger } from "../log/logger.js";
import { packageRoot } from "../util/packageRoot.js";
import type { ViewerHub } from "./viewerHub.js";

/** The page's path and its stream's (browsertrix-crawler's: the page at /, its WebSocket at /ws). */
export const PAGE_PATH = "/";
export const STREAM_PATH = "/ws";

/** The page, read once from the package's src/screencast/ (the built modules and the bundles are elsewhere). */
function livePage(): string {
  return readFileSync(join(packageRoot(), "src", "screencast", "liveView.html"), "utf8");
}

/**
 * Who may ask. On loopback, only a page of the live view itself: the Host must be a loopback name (a DNS
 * rebinding page on another name is refused) and a browser's Origin, when sent, that same host (another
 * site's page open in the same browser must not read the crawl through a WebSocket, which no same-origin
 * rule protects). Listening elsewhere (SCREENCAST_HOST), the live view shows logged-in pages to whoever
 * reaches the port: the URL must carry the token printed at the start, and a browser's Origin must be the
 * page's own (http or https, for a TLS proxy in front), whatever the Host.
 */
function allowed(req: IncomingMessage, token: string | null): boolean {
  const { host = "", origin } = req.headers;
  if (token !== null) {
    if (!tokenMatches(new URL(req.url ?? "/", "http://x").searchParams.get("token"), token)) return false;
    return origin === undefined || [`http://${host}`, `https://${host}`].includes(origin.toLowerCase());
  }
  if (!/^(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d+)?$/i.test(host)) return false;
  return origin === undefined || origin.toLowerCase() === `http://${host.toLowerCase()}`;
}

/** Whether a viewer's token is the server's, compared in constant time (the profile server's door uses it too). */
export function tokenMatches(given: string | null, token: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

const isLoopback = (host: string): boolean => host === "localhost" || host === "::1" || host.startsWith("127.");

export interface LiveViewServerOptions {
  /** Treat the address as off loopback (token and Origin required) even if it is a loopback one: tests on 127.0.0.x. */
  offLoopback?: boolean;
}

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
    /** Off loopback: the token every request must carry (null on loopback). */
    readonly token: string | null,
  ) {}

  static start(port: number, hub: ViewerHub, host = process.env.SCREENCAST_HOST || "127.0.0.1", options: LiveViewServerOptions = {}): Promise<LiveViewServer> {
    const page = livePage();
    const sockets = new WebSocketServer({ noServer: true, maxPayload: 4096 });
    const token = isLoopback(host) && !options.offLoopback ? null : randomBytes(24).toString("base64url");
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (!allowed(req, token)) return void res.writeHead(403, { "content-type": "text/plain" }).end("forbidden\n");
      if (path !== PAGE_PATH || (req.method !== "GET" && req.method !== "HEAD")) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" }).end(req.method === "HEAD" ? undefined : page);
    });
    server.on("upgrade", (req, socket, head) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path !== STREAM_PATH) return void socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
      if (!allowed(req, token)) return void socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
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
        resolve(new LiveViewServer(server, sockets, host, bound, token));
      });
    });
  }

  /** The page's address, with its token off loopback: whoever has it watches the crawl. */
  get url(): string {
    return `http://${this.host.includes(":") ? `[${this.host}]` : this.host}:${this.port}${PAGE_PATH}${this.token ? `?token=${this.token}` : ""}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.sockets.close();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
