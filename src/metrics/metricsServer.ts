import { createServer, type Server } from "node:http";
import { errorMessage, logger } from "../log/logger.js";
import { CrawlMetrics } from "./crawlMetrics.js";

/** The path Prometheus scrapes. */
export const METRICS_PATH = "/metrics";

/**
 * --metricsPort: serves GET /metrics, the crawler's metrics in the Prometheus text format.
 *
 * It listens on every interface, as the health check does (--healthCheckPort): Prometheus scrapes the pod's
 * or host's address, and the metrics are counts, never a URL or a secret. METRICS_HOST narrows it to one
 * address (127.0.0.1; the test suite sets it so that no test listens beyond loopback).
 */
export class MetricsServer {
  private constructor(
    private readonly server: Server,
    readonly metrics: CrawlMetrics,
  ) {}

  /** Listening on `port`; rejects with one clear line when the port is taken or not allowed. */
  static start(port: number, metrics = new CrawlMetrics(), host = process.env.METRICS_HOST?.trim() || undefined): Promise<MetricsServer> {
    return new Promise((resolve, reject) => {
      const server = createServer((req, res) => {
        const path = new URL(req.url ?? "/", "http://x").pathname;
        if (path !== METRICS_PATH) return void res.writeHead(404).end();
        if (req.method !== "GET" && req.method !== "HEAD") return void res.writeHead(405, { allow: "GET, HEAD" }).end();
        metrics.exposition().then(
          ({ contentType, text }) => res.writeHead(200, { "content-type": contentType }).end(req.method === "HEAD" ? undefined : text),
          (err: unknown) => {
            logger.warn("metrics", "cannot collect the metrics", { error: errorMessage(err) });
            res.writeHead(500, { "content-type": "text/plain" }).end("cannot collect the metrics\n");
          },
        );
      });
      server.once("error", (err: NodeJS.ErrnoException) => {
        const why = err.code === "EADDRINUSE" ? "the port is in use" : err.code === "EACCES" ? "not allowed to listen on it" : errorMessage(err);
        reject(new Error(`--metricsPort ${port}: cannot serve the metrics: ${why}`));
      });
      server.listen(port, host, () => {
        server.removeAllListeners("error");
        server.on("error", (err) => logger.warn("metrics", "metrics server error", { error: errorMessage(err) }));
        logger.info("metrics", `metrics served on port ${port} at ${METRICS_PATH}`, { port, host: host ?? "every interface" });
        resolve(new MetricsServer(server, metrics));
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
