import { integer } from "../flagValues.js";
import { OptionsError } from "../optionsError.js";

/**
 * How a crawl starts, fails and ends beyond its limits (browsertrix-crawler's flag names and meanings):
 * which failures fail the whole crawl, what an interrupted crawl leaves for the restart that follows,
 * and how a supervisor can watch it.
 */
export interface LifecycleOptions {
  /** --failOnFailedSeed: a seed that fails (after its retries) fails the crawl, exit code 1. */
  failOnFailedSeed: boolean;
  /** --failOnInvalidStatus: a page answered 4xx/5xx is a failed attempt (retried, then failed), not a crawled page. */
  failOnInvalidStatus: boolean;
  /** --failOnContentCheck: pages (behaviors) may fail the crawl by calling window.__bx_contentCheckFailed(reason), exit code 9. */
  failOnContentCheck: boolean;
  /** --restartsOnError: a supervisor restarts the crawl; an interrupted crawl skips packaging, and failing ends exit 0. */
  restartsOnError: boolean;
  /** --overwrite: the collection's folder is deleted before the crawl starts. */
  overwrite: boolean;
  /** --dryRun: no WARC or WACZ is written, only the pages lists and the logs. */
  dryRun: boolean;
  /** --rateLimitInterruptCount: this many rate-limit answers in a row (each within the back-off of the one before) interrupt the crawl, exit 18; 0 = never. */
  rateLimitInterruptCount: number;
  /** --healthCheckPort: serve GET /healthz on this port; 0 = no server. */
  healthCheckPort: number;
  /** --metricsPort (env METRICS_PORT): serve GET /metrics, Prometheus metrics, on this port; 0 = no server. */
  metricsPort: number;
  /** --screencastPort: serve the live view (src/screencast/) on this port; 0 = none. */
  screencastPort: number;
  /** --screencastRedis: workers' frames go through the crawl Redis, so the live view of any process shows every process's workers. */
  screencastRedis: boolean;
}

export interface RawLifecycleFlags {
  maxPageLimit?: string;
  failOnFailedSeed?: boolean;
  failOnInvalidStatus?: boolean;
  failOnContentCheck?: boolean;
  restartsOnError?: boolean;
  overwrite?: boolean;
  dryRun?: boolean;
  rateLimitInterruptCount?: string;
  healthCheckPort?: string;
  metricsPort?: string;
  screencastPort?: string;
  screencastRedis?: boolean;
  collection?: string;
}

const text = (value: string | number | undefined): string | undefined => (value === undefined ? undefined : String(value));

export function lifecycleOptions(flags: RawLifecycleFlags, env: NodeJS.ProcessEnv = process.env): LifecycleOptions {
  const interrupt = text(flags.rateLimitInterruptCount);
  // browsertrix-crawler: any value not above 0 (its default -1) never interrupts.
  const rateLimitInterruptCount = interrupt === undefined ? 0 : Math.max(0, integer("rateLimitInterruptCount", interrupt, 0, -1));
  const healthCheckPort = integer("healthCheckPort", text(flags.healthCheckPort), 0, 0);
  if (healthCheckPort > 65535) throw new OptionsError(`--healthCheckPort must be a TCP port (1-65535; 0 = none), got ${healthCheckPort}`);
  // The flag wins over the environment (a container's env sets it for every crawl of the image).
  const fromEnv = flags.metricsPort === undefined ? env.METRICS_PORT?.trim() || undefined : undefined;
  if (fromEnv !== undefined && !/^\d+$/.test(fromEnv)) throw new OptionsError(`METRICS_PORT (--metricsPort) must be a TCP port (1-65535; 0 = none), got ${JSON.stringify(fromEnv)}`);
  const metricsPort = integer("metricsPort", text(flags.metricsPort) ?? fromEnv, 0, 0);
  if (metricsPort > 65535) throw new OptionsError(`--metricsPort must be a TCP port (1-65535; 0 = none), got ${metricsPort}`);
  const screencastPort = integer("screencastPort", text(flags.screencastPort), 0, 0);
  if (screencastPort > 65535) throw new OptionsError(`--screencastPort must be a TCP port (1-65535; 0 = none), got ${screencastPort}`);
  // The folder deleted is <cwd>/collections/<collection>: "." or ".." would name collections/ or --cwd itself.
  if (flags.overwrite && flags.collection !== undefined && /^\.+$/.test(flags.collection)) {
    throw new OptionsError(`--overwrite deletes the collection's folder: --collection ${JSON.stringify(flags.collection)} names no collection folder`);
  }
  return {
    failOnFailedSeed: flags.failOnFailedSeed ?? false,
    failOnInvalidStatus: flags.failOnInvalidStatus ?? false,
    failOnContentCheck: flags.failOnContentCheck ?? false,
    restartsOnError: flags.restartsOnError ?? false,
    overwrite: flags.overwrite ?? false,
    dryRun: flags.dryRun ?? false,
    rateLimitInterruptCount,
    healthCheckPort,
    metricsPort,
    screencastPort,
    screencastRedis: flags.screencastRedis ?? false,
  };
}

/**
 * --maxPageLimit caps --pageLimit (--limit): the smaller of the two when both are set, else whichever is
 * (browsertrix-crawler's rule: the Browsertrix service sets it to its organisation's quota, 0 for none).
 */
export function cappedPageLimit(limit: number, maxPageLimit: string | number | undefined): number {
  const max = integer("maxPageLimit", text(maxPageLimit), 0, 0);
  if (!max) return limit;
  return limit ? Math.min(limit, max) : max;
}
