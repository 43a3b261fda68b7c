import { logger } from "../log/logger.js";

/**
 * --waitOnDone: the crawl is finished; wait for SIGINT or SIGTERM before exiting (a supervisor that
 * restarts finished containers, or someone looking at the result, decides when it ends).
 */
export function waitForStopSignal(): Promise<NodeJS.Signals> {
  logger.info("crawl", "All done, waiting for SIGINT or SIGTERM to exit (--waitOnDone)");
  return new Promise((resolve) => {
    // Signal listeners alone do not keep the process alive.
    const keepAlive = setInterval(() => undefined, 60_000);
    const onSignal = (signal: NodeJS.Signals) => {
      clearInterval(keepAlive);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}
