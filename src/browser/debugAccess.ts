import { connect, createServer, type Server, type Socket } from "node:net";
import { errorMessage, logger } from "../log/logger.js";
import { debugAccessHost } from "../util/debugAccessHost.js";

/** Where browsertrix-crawler serves its browser's DevTools protocol with --debugAccessBrowser. */
export const DEBUG_BROWSER_PORT = 9222;

/**
 * --debugAccessBrowser: the browser's DevTools protocol (HTTP /json and its WebSockets) on port 9222, as
 * browsertrix-crawler forwards it (socat) from every interface to the browser's own loopback port. The
 * browser may be restarted: each connection goes to the one running then. It listens on loopback, or on
 * every interface in a container, or where DEBUG_ACCESS_HOST says (util/debugAccessHost.ts). Anyone who
 * reaches the port controls the browser: a debugging aid, never for a shared network.
 */
export async function startBrowserDebugAccess(
  browserEndpoint: () => Promise<string>,
  port = DEBUG_BROWSER_PORT,
  host = debugAccessHost(),
): Promise<{ close(): Promise<void> } | null> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.pause();
    browserEndpoint().then((endpoint) => {
      const upstream = connect(Number(new URL(endpoint).port), "127.0.0.1");
      sockets.add(upstream);
      upstream.on("close", () => sockets.delete(upstream));
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      client.pipe(upstream).pipe(client);
      client.resume();
    }, () => client.destroy());
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once("error", (err) => {
      logger.warn("browser", `--debugAccessBrowser: cannot listen on port ${port}: ${errorMessage(err)}; the crawl goes on without it`);
      resolve(false);
    });
    server.listen(port, host, () => resolve(true));
  });
  if (!listening) return null;
  const where = host === "0.0.0.0" || host === "::" ? "every interface" : host;
  logger.warn("browser", `--debugAccessBrowser: the browser's DevTools protocol is served on ${where} port ${port}: whoever reaches it controls the browser`);
  return {
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
