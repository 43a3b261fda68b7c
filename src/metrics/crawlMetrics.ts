import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";
import { VERSION } from "../version.js";
import { FAILURE_KINDS, failureKind } from "./failureKinds.js";

/** The crawl-wide page counts a scrape reads from the crawl state (Frontier.counts()). */
export interface CrawlPageCounts {
  queued: number;
  pending: number;
  done: number;
  failed: number;
}

/** How long a scrape waits for the crawl state: Redis being away must not hang /metrics. */
export const STATE_READ_TIMEOUT_MS = 2000;

/** Page times from a quick static page to one whose behaviors run for minutes (--behaviorTimeout). */
const PAGE_SECONDS_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600];

/** Every metric the crawler exports, by name (docs/user-guide/scaling.md#metrics lists them). */
export const METRIC_NAMES = {
  info: "crawler_info",
  crawlPages: "crawler_crawl_pages",
  pagesCrawled: "crawler_pages_crawled_total",
  pagesFailed: "crawler_pages_failed_total",
  fetchErrors: "crawler_page_fetch_errors_total",
  pageSeconds: "crawler_page_duration_seconds",
  warcBytes: "crawler_warc_written_bytes_total",
  revisits: "crawler_revisit_records_total",
  conservedBytes: "crawler_dedupe_conserved_bytes_total",
  rateLimitedWaits: "crawler_rate_limited_waits_total",
  browserRestarts: "crawler_browser_restarts_total",
  stateReadErrors: "crawler_state_read_errors_total",
} as const;

/** The crawl-wide gauge's `state` label: the page counts of Frontier, as --statsFilename names them. */
const PAGE_STATES = { queued: "queued", pending: "pending", done: "crawled", failed: "failed" } as const;

/** How a page was captured: loaded in the browser, or fetched and parsed without one (--captureMode hybrid). */
const CAPTURE_KINDS = ["browser", "static"] as const;
type CaptureKind = (typeof CAPTURE_KINDS)[number];

/**
 * The crawler's Prometheus metrics: this process's counters, bumped by the events the run reports
 * (pageCrawled, attemptFailed...), and values read when scraped (the crawl state's counts, the WARC
 * bytes written). Labels are bounded and never hold a URL: `kind` (failureKinds.ts) and `state`.
 */
export class CrawlMetrics {
  readonly registry = new Registry();
  private readonly pagesCrawled: Counter<"capture">;
  private readonly pagesFailed: Counter;
  private readonly fetchErrors: Counter<"kind">;
  private readonly pageSeconds: Histogram;
  private readonly revisits: Counter;
  private readonly conservedBytes: Counter;
  private readonly rateLimitedWaits: Counter;
  private readonly browserRestarts: Counter;
  private readonly stateReadErrors: Counter;
  private readCounts: (() => Promise<CrawlPageCounts>) | null = null;
  /** The crawl state's counts read last: served again while Redis does not answer. */
  private lastCounts: CrawlPageCounts | null = null;
  /** A read of the crawl state still under way (a slow Redis is asked once, not once a scrape). */
  private reading: Promise<CrawlPageCounts> | null = null;
  private readBytes: (() => number) | null = null;
  private bytesCounted = 0;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    new Gauge({ name: METRIC_NAMES.info, help: "The crawler's version (value 1)", labelNames: ["version"], registers }).set({ version: VERSION }, 1);
    this.pagesCrawled = new Counter({ name: METRIC_NAMES.pagesCrawled, help: "Pages this process crawled, by how: loaded in the browser, or fetched without one (--captureMode hybrid)", labelNames: ["capture"], registers });
    for (const capture of CAPTURE_KINDS) this.pagesCrawled.inc({ capture }, 0);
    this.pagesFailed = new Counter({ name: METRIC_NAMES.pagesFailed, help: "Pages this process recorded failed (no retry left)", registers });
    this.fetchErrors = new Counter({ name: METRIC_NAMES.fetchErrors, help: "Failed page attempts of this process (retried ones too), by kind of error", labelNames: ["kind"], registers });
    for (const kind of FAILURE_KINDS) this.fetchErrors.inc({ kind }, 0);
    this.pageSeconds = new Histogram({ name: METRIC_NAMES.pageSeconds, help: "Seconds from a page's load to its links queued, for each page this process crawled", buckets: PAGE_SECONDS_BUCKETS, registers });
    this.revisits = new Counter({ name: METRIC_NAMES.revisits, help: "Revisit records this process wrote (payloads archived already, 304s of --refresh)", registers });
    this.conservedBytes = new Counter({ name: METRIC_NAMES.conservedBytes, help: "Bytes not stored again thanks to revisits: each original's size minus its revisit record's", registers });
    this.rateLimitedWaits = new Counter({ name: METRIC_NAMES.rateLimitedWaits, help: "Page loads answered with a rate limit (--rateLimitStatusCodes): the host backed off and the page waits", registers });
    this.browserRestarts = new Counter({ name: METRIC_NAMES.browserRestarts, help: "Chromium started again after it crashed or was killed", registers });
    this.stateReadErrors = new Counter({ name: METRIC_NAMES.stateReadErrors, help: `Scrapes whose read of the crawl state failed or took over ${STATE_READ_TIMEOUT_MS / 1000}s (the last values read are served)`, registers });
    const metrics = this;
    new Gauge({
      name: METRIC_NAMES.crawlPages,
      help: "Pages of the whole crawl (every process) by state, read from the crawl state",
      labelNames: ["state"],
      registers,
      collect() {
        const counts = metrics.lastCounts;
        if (!counts) return;
        for (const [field, state] of Object.entries(PAGE_STATES)) this.set({ state }, counts[field as keyof CrawlPageCounts]);
      },
    });
    new Counter({
      name: METRIC_NAMES.warcBytes,
      help: "Bytes this process wrote to WARC files",
      registers,
      collect() {
        // A write cut back after a failure takes its bytes back: the counter keeps the most ever written.
        const written = metrics.readBytes?.() ?? 0;
        if (written > metrics.bytesCounted) this.inc(written - metrics.bytesCounted);
        metrics.bytesCounted = Math.max(metrics.bytesCounted, written);
      },
    });
  }

  /** Read the crawl-wide counts from the crawl state at each scrape (once the crawl has joined it). */
  readCrawlStateFrom(read: () => Promise<CrawlPageCounts>): void {
    this.readCounts = read;
  }

  /** Read this process's WARC bytes written at each scrape. */
  readBytesWrittenFrom(read: () => number): void {
    this.readBytes = read;
  }

  /** The crawl is over (its Redis connection closes): the final counts are served from now on. */
  crawlEnded(final: CrawlPageCounts | null): void {
    this.readCounts = null;
    if (final) this.lastCounts = final;
  }

  pageCrawled(seconds: number, capture: CaptureKind = "browser"): void {
    this.pagesCrawled.inc({ capture });
    this.pageSeconds.observe(seconds);
  }

  /** A page attempt failed; `failed`: the page has no retry left. */
  attemptFailed(reason: string | null, failed: boolean, proxyFailure: boolean): void {
    this.fetchErrors.inc({ kind: failureKind(reason, proxyFailure) });
    if (failed) this.pagesFailed.inc();
  }

  rateLimitedWait(): void {
    this.rateLimitedWaits.inc();
  }

  browserRestarted(): void {
    this.browserRestarts.inc();
  }

  revisitWritten(conservedBytes: number): void {
    this.revisits.inc();
    if (conservedBytes > 0) this.conservedBytes.inc(conservedBytes);
  }

  /** The Prometheus text exposition of every metric (the crawl state read first, so that a failed read is counted in it). */
  async exposition(): Promise<{ contentType: string; text: string }> {
    await this.readCrawlCounts();
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  private async readCrawlCounts(): Promise<void> {
    const read = this.readCounts;
    if (!read) return;
    this.reading ??= read().finally(() => (this.reading = null));
    try {
      this.lastCounts = await withTimeout(this.reading, STATE_READ_TIMEOUT_MS, `no answer within ${STATE_READ_TIMEOUT_MS / 1000}s`);
    } catch (err) {
      this.stateReadErrors.inc();
      logger.debug("metrics", "cannot read the crawl state for /metrics: serving the last values", { error: errorMessage(err) });
    }
  }
}
