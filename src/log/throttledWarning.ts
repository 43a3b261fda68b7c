import { logger, type LogDetails } from "./logger.js";

/**
 * A warning about a failure that repeats for as long as a service is away (the dedupe Redis, say):
 * logged at most once per interval, so the log says it without being flooded.
 */
export class ThrottledWarning {
  private lastLogged = 0;

  constructor(
    private readonly context: string,
    private readonly intervalMs = 5000,
  ) {}

  warn(message: string, details: LogDetails): void {
    if (Date.now() - this.lastLogged < this.intervalMs) return;
    this.lastLogged = Date.now();
    logger.warn(this.context, message, details);
  }
}
