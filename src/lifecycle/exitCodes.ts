/**
 * Process exit codes of `crawl`: browsertrix-crawler's (its src/util/constants.ts ExitCodes), so that
 * wrappers written for it read ours the same way. Documented in docs/user-guide/limits.md.
 */
export const ExitCode = {
  /** The crawl finished (queue empty, or the page limit reached) and its output is written. */
  Finished: 0,
  /** A fatal error: the browser would not start, a file could not be written, the sitemaps not all queued, a seed failed with --failOnFailedSeed... */
  Failed: 1,
  /** The disk (or quota) is full: what is whole is kept; free space and run the same command to resume. */
  OutOfSpace: 3,
  /** Bad command line or config: unknown flag, bad value, bad seed URL (browsertrix-crawler's InvalidConfig, #1138). */
  BadUsage: 4,
  /** The crawl-state or dedupe Redis could not be reached (or stayed unreachable through every retry). */
  RedisUnavailable: 8,
  /** No page could be crawled: every seed failed (or robots.txt disallows them all). */
  AllSeedsFailed: 9,
  /** --failOnContentCheck: a page or behavior reported a failed content check (browsertrix-crawler's Failed, as for no seed crawled). */
  ContentCheckFailed: 9,
  /** Stopped by SIGINT/SIGTERM: in-flight pages finished, what was captured is written; re-run to resume. */
  Interrupted: 11,
  /** --failOnFailedLimit reached: the crawl stopped; what was captured is written, not committed. */
  FailedLimit: 12,
  /** Stopped by a second signal (in-flight pages handed back) or a stop that did not complete in time. */
  InterruptedForce: 13,
  /** --sizeLimit reached: the crawl stopped, what was captured is written, not committed; re-run to go on. */
  SizeLimit: 14,
  /** --timeLimit reached: as for --sizeLimit. */
  TimeLimit: 15,
  /** --diskUtilization reached: the disk holding the collection is fuller than allowed; as for --sizeLimit. */
  DiskUtilization: 16,
  /** --rateLimitInterruptCount reached: interrupted, what was captured is written (not with --restartsOnError); re-run to resume. */
  RateLimited: 18,
  /** A proxy (--proxyServer, PROXY_SERVER, --proxyServerConfig) cannot be reached at the start, its ssh tunnel not opened, or its credentials are refused. */
  ProxyError: 21,
  /** A WACZ could not be uploaded to STORE_ENDPOINT_URL (or WEBHOOK_URL not told) after every retry; the WACZ is kept on disk. */
  UploadFailed: 22,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];
