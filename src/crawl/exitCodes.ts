/** Process exit codes of `crawl` (documented in README.md). */
export const ExitCode = {
  /** The crawl finished (queue empty, or a page/time/size limit reached) and its output is written. */
  Finished: 0,
  /** A fatal error: unreachable Redis, browser would not start, no seed could be loaded, disk error. */
  Failed: 1,
  /** Bad command line: unknown flag, bad value, bad seed URL. */
  BadUsage: 2,
  /** Stopped by SIGINT/SIGTERM: what was captured is written, the crawl can be resumed by re-running. */
  Interrupted: 3,
  /** --failOnFailedLimit reached: the crawl stopped; what was captured is written, not committed. */
  FailedLimit: 4,
  /** A WACZ could not be uploaded to STORE_ENDPOINT_URL (or WEBHOOK_URL not told) after every retry; the WACZ is kept on disk. */
  UploadFailed: 22,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];
