import type { RateLimitAnswer } from "../capture/pageCapture.js";
import type { RateLimitOptions } from "../config/groups/rateLimitOptions.js";
import { logger } from "../log/logger.js";
import type { Frontier } from "../frontier/frontier.js";
import type { HostPacing } from "./hostPacing.js";

/** Without a Retry-After, a rate-limited page waits this long, doubling with each further answer (capped by --rateLimitTimeout). */
export const RATE_LIMIT_BACKOFF_BASE_MS = 5000;

/** Retry-After as milliseconds from `now`: delay-seconds or an HTTP-date (RFC 9110 10.2.3); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only a real date: Date.parse reads much that is not one (e.g. "5 minutes" as a year).
  if (!/^[A-Za-z]{3,9},? /.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * The server answered the page with a rate limit: nothing of it was stored. Back off its host for every
 * process of the crawl (through the host pacing), and put the page back for after that, or fail it once
 * --rateLimitMaxRetries answers are used up. Returns whether the page failed.
 */
export async function settleRateLimited(
  url: string,
  answer: RateLimitAnswer,
  deps: { state: Frontier; hostPacing: HostPacing; limits: RateLimitOptions },
): Promise<"retry" | "failed" | "not-owner"> {
  const retryAfterMs = parseRetryAfter(answer.retryAfter);
  const capMs = deps.limits.timeoutSeconds * 1000;
  const reason = `rate limited: HTTP ${answer.status} on every try (--rateLimitMaxRetries ${deps.limits.maxRetries})`;
  const host = new URL(answer.url).host;
  // Back off at once (the first delay this answer can mean), then for as long as the page's count says.
  await deps.hostPacing.backOff(host, Math.min(retryAfterMs ?? RATE_LIMIT_BACKOFF_BASE_MS, capMs));
  const { outcome, delayMs } = await deps.state.markRateLimited(url, retryAfterMs, { maxRetries: deps.limits.maxRetries, backoffBaseMs: RATE_LIMIT_BACKOFF_BASE_MS, capMs }, reason);
  if (delayMs > 0) await deps.hostPacing.backOff(host, delayMs);
  const details = { url, status: answer.status, retryAfter: answer.retryAfter, backOffSeconds: delayMs / 1000 };
  if (retryAfterMs !== null && retryAfterMs > capMs) logger.warn("page", "Retry-After is longer than --rateLimitTimeout: waiting that long instead", details);
  if (outcome === "failed") logger.warn("page", "page failed: rate limited on every try", details);
  else if (outcome === "retry") logger.warn("page", "page rate limited: not archived; its host is backed off and the page tried again later", details);
  return outcome;
}
