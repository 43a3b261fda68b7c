import { errorMessage, logger } from "../log/logger.js";

/** The dedupe index stayed unreachable through every retry of a step that cannot be skipped. */
export class DedupeIndexUnavailableError extends Error {}

/** A step failed for a reason retrying cannot change (not the index being away): thrown at once. */
export class NotRetriedError extends Error {}

/** Retry a dedupe-index step with backoff (0.5 s, 1 s, 2 s... about 15 s in all) while its Redis is briefly away. */
export async function withDedupeRetries<T>(what: string, step: () => Promise<T>, attempts = 6): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (err instanceof NotRetriedError) throw err;
      if (attempt >= attempts) {
        throw new DedupeIndexUnavailableError(`cannot ${what}: dedupe index unreachable after ${attempts} attempts (${errorMessage(err)})`);
      }
      logger.warn("dedupe", `${what} failed, retrying`, { attempt, error: errorMessage(err) });
      await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
    }
  }
}
