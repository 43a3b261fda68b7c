import { errorMessage, logger } from "../log/logger.js";

/** Attempts of an upload or a webhook call, and the wait before the second (doubled before each next one). */
export interface BackoffPolicy {
  attempts: number;
  firstDelayMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { attempts: 4, firstDelayMs: 2_000 };

/**
 * Run `attempt` until it succeeds or `policy.attempts` tries failed (waits 2 s, 4 s, 8 s between them by
 * default); each failure is logged as a warning, the last one (or one `isPermanent` says asking again
 * cannot mend) is thrown.
 */
export async function withBackoff<T>(
  what: string,
  attempt: () => Promise<T>,
  { policy = DEFAULT_BACKOFF, isPermanent = () => false }: { policy?: BackoffPolicy; isPermanent?: (err: unknown) => boolean } = {},
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= policy.attempts || isPermanent(err)) throw err;
      const delayMs = policy.firstDelayMs * 2 ** (n - 1);
      logger.warn("storage", `${what} failed, retrying`, { attempt: n, of: policy.attempts, retryInMs: delayMs, error: errorMessage(err) });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
