import { logger } from "../log/logger.js";

/**
 * --waitOnDone: the crawl is finished; wait for SIGINT or SIGTERM before exiting (a supervisor that
 * restarts finished containers, or someone looking at the result, decides when it ends).
 */
export function waitForStopSignal(): Promise<NodeJS.Signals> {
  logger.info("crawl", "All done, waiting for SIGINT or SIGTERM to exit (--waitOnDone)");
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}
