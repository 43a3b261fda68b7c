import { describe, expect, it } from "vitest";
import { cappedPageLimit, lifecycleOptions } from "../../../src/config/groups/lifecycleOptions.js";
import { OptionsError } from "../../../src/config/optionsError.js";
import { exitCodeOf } from "../../../src/crawl/crawlStatus.js";

describe("--maxPageLimit", () => {
  it("caps --pageLimit as browsertrix-crawler does", () => {
    expect(cappedPageLimit(0, undefined)).toBe(0);
    expect(cappedPageLimit(10, "0")).toBe(10);
    expect(cappedPageLimit(0, "5")).toBe(5);
    expect(cappedPageLimit(10, "5")).toBe(5);
    expect(cappedPageLimit(3, 5)).toBe(3);
    expect(() => cappedPageLimit(0, "-1")).toThrow(OptionsError);
  });
});

describe("lifecycle flags", () => {
  it("defaults: nothing fails the crawl beyond ours, no health server, no live view, no rate-limit interrupt", () => {
    expect(lifecycleOptions({}, {})).toEqual({
      failOnFailedSeed: false, failOnInvalidStatus: false, failOnContentCheck: false, restartsOnError: false,
      overwrite: false, dryRun: false, rateLimitInterruptCount: 0, healthCheckPort: 0, metricsPort: 0, screencastPort: 0, screencastRedis: false,
    });
  });

  it("--metricsPort, else env METRICS_PORT: the flag wins; bad values are one line naming where they came from", () => {
    expect(lifecycleOptions({}, { METRICS_PORT: "9100" }).metricsPort).toBe(9100);
    expect(lifecycleOptions({ metricsPort: "9200" }, { METRICS_PORT: "9100" }).metricsPort).toBe(9200);
    expect(lifecycleOptions({ metricsPort: "0" }, { METRICS_PORT: "9100" }).metricsPort).toBe(0);
    expect(lifecycleOptions({}, { METRICS_PORT: " " }).metricsPort).toBe(0);
    expect(() => lifecycleOptions({ metricsPort: "70000" }, {})).toThrow("--metricsPort must be a TCP port");
    expect(() => lifecycleOptions({}, { METRICS_PORT: "metrics" })).toThrow('METRICS_PORT (--metricsPort) must be a TCP port (1-65535; 0 = none), got "metrics"');
  });

  it("--rateLimitInterruptCount -1 or 0 never interrupts; bad values are one line", () => {
    expect(lifecycleOptions({ rateLimitInterruptCount: "-1" }).rateLimitInterruptCount).toBe(0);
    expect(lifecycleOptions({ rateLimitInterruptCount: "3" }).rateLimitInterruptCount).toBe(3);
    expect(() => lifecycleOptions({ rateLimitInterruptCount: "-2" })).toThrow("--rateLimitInterruptCount must be at least -1");
    expect(() => lifecycleOptions({ healthCheckPort: "70000" })).toThrow("--healthCheckPort must be a TCP port");
    expect(() => lifecycleOptions({ healthCheckPort: "http" })).toThrow("--healthCheckPort must be a whole number");
  });

  it("--overwrite refuses a collection name that is no collection folder", () => {
    expect(() => lifecycleOptions({ overwrite: true, collection: ".." })).toThrow(OptionsError);
    expect(() => lifecycleOptions({ overwrite: true, collection: "." })).toThrow(OptionsError);
    expect(lifecycleOptions({ overwrite: true, collection: "a..b" }).overwrite).toBe(true);
  });
});

describe("exit codes of the lifecycle flags (browsertrix-crawler's)", () => {
  it("failed seed 1, content check 9, rate-limit interrupt 18; with --restartsOnError the fatal ends exit 0", () => {
    expect(exitCodeOf("failed", { stopReason: "failed-seed", forced: false, failureKind: "failed-seed" })).toBe(1);
    expect(exitCodeOf("failed", { stopReason: "content-check", forced: false, failureKind: "content-check" })).toBe(9);
    expect(exitCodeOf("interrupted", { stopReason: "rate-limited", forced: false })).toBe(18);
    expect(exitCodeOf("failed", { stopReason: "content-check", forced: false, failureKind: "content-check", restartsOnError: true })).toBe(0);
    expect(exitCodeOf("failed-limit", { stopReason: "failed-limit", forced: false, restartsOnError: true })).toBe(0);
    // An interruption is no failure: the supervisor restarts it.
    expect(exitCodeOf("interrupted", { stopReason: "signal", forced: false, restartsOnError: true })).toBe(11);
    expect(exitCodeOf("failed", { stopReason: null, forced: false, failureKind: "no-page-crawled", restartsOnError: true })).toBe(9);
  });
});
