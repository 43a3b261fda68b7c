import { createServer, type Server } from "node:http";
import { errorMessage, logger } from "../log/logger.js";

/** The path a supervisor (a Kubernetes liveness probe) asks, as browsertrix-crawler's healthcheck. */
export const HEALTH_PATH = "/healthz";

/**
 * --healthCheckPort: answers GET /healthz 200 while the crawl is healthy, 503 once `threshold` page
 * attempts in a row have failed (browsertrix-crawler's rule, with --workers as the threshold: every
 * tab failing its page, e.g. the browser gone or the network down). A crawled page makes it healthy again.
 *
 * It listens on every interface, as browsertrix-crawler's does: a Kubernetes probe comes to the pod's
 * address, not to loopback. It tells nothing but the status code. HEALTHCHECK_HOST narrows it to one
 * address (127.0.0.1 outside a pod; the test suite sets it so no test listens beyond loopback).
 */
export class HealthCheck {
  private failedInARow = 0;

  private constructor(
    private readonly server: Server,
    private readonly threshold: number,
  ) {}

  /** Listening on `port`; rejects with one clear line when the port is taken or not allowed. */
  static start(port: number, threshold: number, host = process.env.HEALTHCHECK_HOST || undefined): Promise<HealthCheck> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      const check = new HealthCheck(server, Math.max(1, threshold));
      server.on("request", (req, res) => {
        const path = new URL(req.url ?? "/", "http://x").pathname;
        if (path !== HEALTH_PATH) return void res.writeHead(404).end();
        res.writeHead(check.healthy ? 200 : 503, { "content-type": "text/plain" }).end(check.healthy ? "ok\n" : `unhealthy: ${check.failedInARow} page attempts in a row failed\n`);
      });
      server.once("error", (err: NodeJS.ErrnoException) => {
        const why = err.code === "EADDRINUSE" ? "the port is in use" : err.code === "EACCES" ? "not allowed to listen on it" : errorMessage(err);
        reject(new Error(`--healthCheckPort ${port}: cannot serve the health check: ${why}`));
      });
      server.listen(port, host, () => {
        server.removeAllListeners("error");
        server.on("error", (err) => logger.warn("healthcheck", "health check server error", { error: errorMessage(err) }));
        logger.info("healthcheck", `health check served on port ${port} at ${HEALTH_PATH}`, { port, host: host ?? "every interface", threshold: check.threshold });
        resolve(check);
      });
    });
  }

  get healthy(): boolean {
    return this.failedInARow < this.threshold;
  }

  pageCrawled(): void {
    if (this.failedInARow > 0) logger.info("healthcheck", "page crawled: failed attempts in a row reset", { failedInARow: this.failedInARow });
    this.failedInARow = 0;
  }

  attemptFailed(): void {
    this.failedInARow += 1;
    if (this.failedInARow === this.threshold) logger.warn("healthcheck", "unhealthy: as many page attempts in a row failed as there are workers", { failedInARow: this.failedInARow });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
