import type { BehaviorTally } from "../behaviors/behaviors.js";
import type { ChangeSummary } from "../reports/changeReport.js";
import { ExitCode, type ExitCodeValue } from "../lifecycle/exitCodes.js";
import type { StopReason } from "./stopControl.js";

export type CrawlStatus = "done" | "interrupted" | "limit-reached" | "failed" | "failed-limit";

export interface CrawlOutcome {
  exitCode: ExitCodeValue;
  stats: CrawlStats;
  waczPaths: string[];
  /** One line saying why the crawl failed (exit code 1). */
  failure: string | null;
}

/** The crawl's final counts, as written to --statsFilename and the last log line. */
export interface CrawlStats {
  crawlId: string;
  crawled: number;
  failed: number;
  /** Failed page attempts, those that were retried included. */
  failedAttempts: number;
  queued: number;
  pending: number;
  total: number;
  limit: { max: number; hit: boolean };
  bytesWritten: number;
  elapsedSeconds: number;
  status: CrawlStatus;
  committed: boolean;
  /** This process's writer slot (several processes on one crawl each have one). */
  writer: number;
  browserLaunches: number;
  /** With --refresh / --skipFreshDays: pages per kind of change since the archived captures (the URLs are in changeReport). */
  changes?: ChangeSummary;
  changeReport?: string;
  /** Pages this process crawled whose bodies stayed cut off after every retry (stored WARC-Truncated). */
  truncated: { count: number; report: string };
  /** Bodies this process kept short on purpose: at --maxResourceSize or a storage limit (length), streams still open when their page ended (time). */
  bodiesCutShort: { length: number; time: number };
  /** Pages not crawled because robots.txt disallows them (--robots). */
  skippedRobots: number;
  /** Rate-limit answers to page loads (--rateLimitStatusCodes): not archived, not counted as crawled or as failed attempts. */
  rateLimited: number;
  /** Requests blocked by --blockRules / --blockAds (not sent, not archived, not failures), and the report listing them. */
  blocked: number;
  blockedReport?: string;
  /** --blockAds: the host list used. */
  adHosts?: { list: string; version: string; hosts: number };
  /** --dedupePagesMinDepth: pages whose HTML was archived already (stored as revisits, not crawled), and pages taken past --limit. */
  skippedDuplicates?: number;
  skippedPageLimit?: number;
  /** Pages this process crawled whose behaviors finished / timed out, and the seconds they ran. */
  behaviors: BehaviorTally;
}

/** What, beyond its status, decides a crawl's exit code. */
export interface CrawlEnd {
  /** Why the crawl was asked to stop, if it was (which limit, a signal...). */
  stopReason: StopReason | null;
  /** A second signal ended it at once. */
  forced: boolean;
  /** Why it failed, when it did. */
  failureKind?: "no-page-crawled" | "out-of-space" | "redis-unavailable" | "failed-seed" | "failed-seed-proxy" | "content-check" | "other";
  /**
   * --restartsOnError: as browsertrix-crawler, the ends it calls fatal (a failed seed, a content check,
   * the failed limit) exit 0, so that the supervisor does not restart a crawl that cannot succeed.
   */
  restartsOnError?: boolean;
}

export function exitCodeOf(status: CrawlStatus, end: CrawlEnd = { stopReason: null, forced: false }): ExitCodeValue {
  const fatal = (status === "failed" && (end.failureKind === "failed-seed" || end.failureKind === "failed-seed-proxy" || end.failureKind === "content-check")) || status === "failed-limit";
  if (fatal && end.restartsOnError) return ExitCode.Finished;
  switch (status) {
    case "failed":
      if (end.failureKind === "content-check") return ExitCode.ContentCheckFailed;
      if (end.failureKind === "failed-seed-proxy") return ExitCode.ProxyError;
      if (end.failureKind === "no-page-crawled") return ExitCode.AllSeedsFailed;
      if (end.failureKind === "out-of-space") return ExitCode.OutOfSpace;
      if (end.failureKind === "redis-unavailable") return ExitCode.RedisUnavailable;
      return ExitCode.Failed;
    case "interrupted":
      if (end.stopReason === "rate-limited") return ExitCode.RateLimited;
      return end.forced ? ExitCode.InterruptedForce : ExitCode.Interrupted;
    case "failed-limit":
      return ExitCode.FailedLimit;
    case "limit-reached":
      // As browsertrix-crawler: a size or time limit is an interruption (the crawl is not complete); the page limit is not.
      if (end.stopReason === "size-limit") return ExitCode.SizeLimit;
      if (end.stopReason === "disk-utilization") return ExitCode.DiskUtilization;
      return end.stopReason === "time-limit" ? ExitCode.TimeLimit : ExitCode.Finished;
    case "done":
      return ExitCode.Finished;
  }
}
