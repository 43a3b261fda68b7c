import type { CaptureKind } from "../page/pageLoadResult.js";
import type { Cluster, Redis } from "ioredis";
import type { RateLimitAnswer } from "../capture/pageCapture.js";
import type { LifecycleOptions } from "../config/groups/lifecycleOptions.js";
import type { RateLimitOptions } from "../config/groups/rateLimitOptions.js";
import { logger } from "../log/logger.js";
import { isProxyFailure } from "../proxy/proxyFailure.js";
import type { QueuedPage } from "../frontier/frontier.js";
import type { HealthCheck } from "../lifecycle/healthCheck.js";
import type { CrawlMetrics } from "../metrics/crawlMetrics.js";
import { parseRetryAfter } from "../politeness/rateLimit.js";
import type { StopControl } from "./stopControl.js";

/**
 * What page outcomes mean for the crawl as a whole (browsertrix-crawler's lifecycle flags): the health
 * check's count of failures in a row, a seed failing the crawl (--failOnFailedSeed), 4xx/5xx pages as
 * failures (--failOnInvalidStatus), a failed content check (--failOnContentCheck), and rate-limit answers
 * interrupting it (--rateLimitInterruptCount). And what this process's metrics count (--metricsPort).
 */
export class CrawlWatch {
  constructor(
    private readonly deps: {
      lifecycle: LifecycleOptions;
      rateLimit: RateLimitOptions;
      redis: Redis | Cluster;
      crawlId: string;
      stop: StopControl;
      health: HealthCheck | null;
      /** --metricsPort: counts pages, failures by kind, rate-limited waits, browser restarts; null when not asked for. */
      metrics?: CrawlMetrics | null;
      /** Pages are fetched through a proxy (a seed's timeout is then the proxy's failure). */
      proxied: boolean;
    },
  ) {}

  /** A page was crawled, in `seconds` from its load to its links queued, in a browser or without one (--captureMode hybrid). */
  pageCrawled(seconds: number, capture: CaptureKind): void {
    this.deps.health?.pageCrawled();
    this.deps.metrics?.pageCrawled(seconds, capture);
  }

  /** Chromium had to be started again (it crashed or was killed). */
  browserRestarted(): void {
    this.deps.metrics?.browserRestarted();
  }

  /** With --failOnInvalidStatus, why a page answered with this status is a failed attempt; else null. */
  invalidStatus(status: number): string | null {
    return this.deps.lifecycle.failOnInvalidStatus && status >= 400 ? `invalid status: HTTP ${status} (--failOnInvalidStatus)` : null;
  }

  /** A page attempt failed (a rate-limit answer too); `outcome` "failed" when it has no retry left. */
  attemptFailed(page: QueuedPage, outcome: string, reason: string | null): void {
    this.deps.health?.attemptFailed();
    const proxyFailure = isProxyFailure(reason, this.deps.proxied);
    this.deps.metrics?.attemptFailed(reason, outcome === "failed", proxyFailure);
    if (outcome === "failed" && page.depth === 0 && this.deps.lifecycle.failOnFailedSeed) {
      const kind = proxyFailure ? "failed-seed-proxy" : "failed-seed";
      this.deps.stop.fail(kind, `seed ${page.url} failed: ${reason ?? "not loaded"} (--failOnFailedSeed)`);
    }
  }

  /** A page called the content-check function: the crawl fails (--failOnContentCheck). */
  contentCheckFailed(url: string, reason: string): void {
    this.deps.stop.fail("content-check", `content check failed on ${url}: ${reason} (--failOnContentCheck)`);
  }

  /**
   * Count a rate-limit answer crawl-wide (every process, in the crawl-state Redis). As in browsertrix-crawler
   * the count is forgotten when no further answer comes in time, here: the back-off the answer causes (its
   * Retry-After, at most --rateLimitTimeout) and --rateLimitTimeout more, so that the retry a back-off
   * leads to still counts. --rateLimitInterruptCount answers counted interrupt the crawl (exit code 18).
   */
  async rateLimitAnswer(answer: RateLimitAnswer): Promise<void> {
    this.deps.metrics?.rateLimitedWait();
    const limit = this.deps.lifecycle.rateLimitInterruptCount;
    if (limit <= 0) return;
    const retryAfterMs = parseRetryAfter(answer.retryAfter);
    const timeout = this.deps.rateLimit.timeoutSeconds;
    const ttlSeconds = Math.ceil(Math.min(retryAfterMs !== null ? retryAfterMs / 1000 : timeout, timeout) + timeout);
    const key = `${this.deps.crawlId}:rateLimitRun`;
    const replies = await this.deps.redis.multi().incr(key).expire(key, ttlSeconds).exec();
    const count = Number(replies?.[0]?.[1] ?? 0);
    if (count >= limit && !this.deps.stop.requested) {
      logger.warn("crawl", `${count} rate-limit answers (--rateLimitInterruptCount ${limit}): interrupting the crawl`, { url: answer.url, status: answer.status });
      this.deps.stop.request("rate-limited");
    }
  }
}
