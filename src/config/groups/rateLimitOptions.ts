import { OptionsError } from "../optionsError.js";

/** How the crawl treats a page whose server answers "too many requests" (browsertrix-crawler's flag names). */
export interface RateLimitOptions {
  /** --rateLimitStatusCodes: a page answered with one of these is rate-limited, not crawled. */
  statusCodes: number[];
  /** --rateLimitMaxRetries: rate-limit answers a page may get before it is failed; -1 = no limit. */
  maxRetries: number;
  /** --rateLimitTimeout: seconds a host is backed off without a Retry-After, and the most a Retry-After is honoured. */
  timeoutSeconds: number;
}

export interface RawRateLimitFlags {
  rateLimitStatusCodes?: string[];
  rateLimitMaxRetries?: string;
  rateLimitTimeout?: string;
}

export const DEFAULT_RATE_LIMIT_STATUS_CODES = [429, 503];
export const DEFAULT_RATE_LIMIT_MAX_RETRIES = 4;
export const DEFAULT_RATE_LIMIT_TIMEOUT_SECONDS = 300;

export function rateLimitOptions(flags: RawRateLimitFlags): RateLimitOptions {
  const codes = (flags.rateLimitStatusCodes ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  const statusCodes = codes.map((code) => {
    if (!/^\d{3}$/.test(code) || Number(code) < 400 || Number(code) > 599) throw new OptionsError(`--rateLimitStatusCodes takes HTTP status codes from 400 to 599, got ${JSON.stringify(code)}`);
    return Number(code);
  });
  const maxRetries = flags.rateLimitMaxRetries === undefined ? DEFAULT_RATE_LIMIT_MAX_RETRIES : Number(flags.rateLimitMaxRetries.trim());
  if (!Number.isInteger(maxRetries) || maxRetries < -1) throw new OptionsError(`--rateLimitMaxRetries must be a whole number, -1 for no limit, got ${JSON.stringify(flags.rateLimitMaxRetries)}`);
  const timeoutSeconds = flags.rateLimitTimeout === undefined ? DEFAULT_RATE_LIMIT_TIMEOUT_SECONDS : Number(flags.rateLimitTimeout.trim());
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) throw new OptionsError(`--rateLimitTimeout must be a number of seconds above 0, got ${JSON.stringify(flags.rateLimitTimeout)}`);
  return { statusCodes: codes.length ? [...new Set(statusCodes)] : DEFAULT_RATE_LIMIT_STATUS_CODES, maxRetries, timeoutSeconds };
}
