/**
 * Crawl benchmark: crawls a generated loopback site and prints JSON with pages, seconds, pages per
 * second, WARC bytes and the crawler processes' peak RSS. With --processes K, K crawler processes share
 * the crawl through one (private) redis-server.
 *   node dist/bench/crawl.js [--pages 200] [--workers 2] [--processes 1]
 * With --behaviors, every page also has content only in-page behaviors capture (a second srcset
 * candidate, lazy and data-src images far below the fold, a feed page fetched on scroll): the site is
 * crawled without behaviors (--behaviors "") and with the default ones, and the JSON gives the seconds of
 * each and the share of those lazy/scroll resources each captured (default --pages 20 then).
 *   node dist/bench/crawl.js --behaviors [--pages 20] [--workers 2] [--withBehaviors autofetch,autoplay]
 * (--withBehaviors: the --behaviors list of the run with behaviors, to see what leaving one out saves;
 * default: the crawler's default behaviors.)
 * It also lists what the run without behaviors captured and the run with them did not (missedWithBehaviors:
 * none expected). Each run also gives where the pages' time went ("phases"): the crawler's debug lines "page timings"
 * (src/page/pageTimings.ts), summed over pages and as a mean per page, in seconds.
 */
import { spawn } from "node:child_process";
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { WARCParser } from "warcio";
import { PAGE_TIMINGS_MESSAGE } from "../src/page/pageTimings.js";
import { lazyResourcePaths, startGeneratedSite, type GeneratedSite } from "./lib/generatedSite.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";

const { values } = parseArgs({
  options: {
    pages: { type: "string" },
    workers: { type: "string", default: "2" },
    processes: { type: "string", default: "1" },
    behaviors: { type: "boolean", default: false },
    withBehaviors: { type: "string" },
  },
});
const pages = Number(values.pages ?? (values.behaviors ? 20 : 200));
const workers = Number(values.workers);
const processes = Number(values.processes);
const crawlEntry = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));

function peakRssKb(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

interface CrawlRun {
  exitCodes: number[];
  seconds: number;
  warcBytes: number;
  peakRssKb: number[];
  /** Target URIs of the response records written. */
  captured: Set<string>;
  /** stats.behaviors of the (first) crawler process. */
  behaviors: unknown;
  phases: PhaseSeconds;
}

/** Per phase of a page (and per behavior, "behavior:<name>"): seconds summed over pages and the mean per page. */
type PhaseSeconds = Record<string, { seconds: number; perPage: number }>;

/** Sum the "page timings" lines of the crawl's log files. */
function phaseSeconds(logsDir: string): PhaseSeconds {
  const sums = new Map<string, { ms: number; pages: number }>();
  const add = (phase: string, ms: unknown) => {
    if (typeof ms !== "number") return;
    const sum = sums.get(phase) ?? { ms: 0, pages: 0 };
    sums.set(phase, { ms: sum.ms + ms, pages: sum.pages + 1 });
  };
  let pages = 0;
  for (const file of readdirSync(logsDir)) {
    for (const line of readFileSync(join(logsDir, file), "utf8").split("\n")) {
      if (!line.includes(PAGE_TIMINGS_MESSAGE)) continue;
      const entry = JSON.parse(line) as { message: string; details: { ms?: Record<string, unknown>; behaviors?: Record<string, unknown> } };
      if (entry.message !== PAGE_TIMINGS_MESSAGE) continue;
      pages += 1;
      for (const [phase, ms] of Object.entries(entry.details.ms ?? {})) add(phase, ms);
      for (const [name, ms] of Object.entries(entry.details.behaviors ?? {})) add(`behavior:${name}`, ms);
    }
  }
  // The mean over all pages: a phase a page skipped counts as 0 s for it.
  return Object.fromEntries([...sums].map(([phase, { ms }]) => [phase, { seconds: Math.round(ms / 10) / 100, perPage: Math.round(ms / Math.max(1, pages)) / 1000 }]));
}

async function crawlSite(site: GeneratedSite, extraArgs: string[]): Promise<CrawlRun> {
  const cwd = mkdtempSync(join(tmpdir(), "bench-crawl-"));
  const redis = new EmbeddedRedis({ dataDir: join(cwd, "redis"), persist: false });
  const redisUrl = await redis.start();
  const started = process.hrtime.bigint();
  const children = Array.from({ length: processes }, () =>
    spawn(process.execPath, [crawlEntry, "--url", `${site.url}/page/0.html`, "--collection", "bench", "--crawlId", "bench",
      "--cwd", cwd, "--workers", String(workers), "--netIdleWait", "2", "--redisStoreUrl", redisUrl,
      // Debug lines of the "page" context only: they hold the page timings (few lines: no cost to speak of).
      "--logLevel", "debug", "--context", "page",
      "--statsFilename", join(cwd, "stats.json"), ...extraArgs],
      { stdio: ["ignore", "ignore", "pipe"] }),
  );
  // What a person should see: the warnings and errors (the log file keeps every line).
  for (const child of children) {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      if (/"logLevel":"(warn|error)"/.test(line) || !line.startsWith("{")) process.stderr.write(line + "\n");
    });
  }
  const peaks = children.map(() => 0);
  const sampler = setInterval(() => children.forEach((c, i) => (peaks[i] = Math.max(peaks[i], peakRssKb(c.pid!)))), 200);
  const exitCodes: number[] = await Promise.all(children.map((c) => new Promise<number>((resolve) => c.on("exit", (code) => resolve(code ?? -1)))));
  clearInterval(sampler);
  await redis.stop();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const archive = join(cwd, "collections", "bench", "archive");
  const warcs = readdirSync(archive).map((f) => join(archive, f));
  const warcBytes = warcs.reduce((sum, f) => sum + statSync(f).size, 0);
  const captured = new Set<string>();
  for (const warc of warcs) {
    for await (const record of new WARCParser(createReadStream(warc))) {
      if (record.warcType === "response" && record.warcTargetURI) captured.add(record.warcTargetURI);
    }
  }
  let behaviors: unknown = null;
  try {
    behaviors = (JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8")) as { behaviors?: unknown }).behaviors ?? null;
  } catch {
    // no stats: the exit code says why
  }
  const phases = phaseSeconds(join(cwd, "collections", "bench", "logs"));
  rmSync(cwd, { recursive: true, force: true });
  return { exitCodes, seconds: Math.round(seconds * 100) / 100, warcBytes, peakRssKb: peaks, captured, behaviors, phases };
}

const site = await startGeneratedSite(pages, { lazy: values.behaviors });
if (!values.behaviors) {
  const run = await crawlSite(site, []);
  console.log(JSON.stringify({
    benchmark: "crawl",
    exitCodes: run.exitCodes,
    pages,
    processes,
    workersPerProcess: workers,
    seconds: run.seconds,
    pagesPerSecond: Math.round((pages / run.seconds) * 100) / 100,
    warcBytes: run.warcBytes,
    peakRssMBPerProcess: run.peakRssKb.map((kb) => Math.round(kb / 102.4) / 10),
    phases: run.phases,
  }));
} else {
  const lazy = lazyResourcePaths(pages).map((path) => site.url + path);
  const summary = (run: CrawlRun) => {
    const captured = lazy.filter((url) => run.captured.has(url)).length;
    return {
      exitCodes: run.exitCodes,
      seconds: run.seconds,
      pagesPerSecond: Math.round((pages / run.seconds) * 100) / 100,
      warcBytes: run.warcBytes,
      lazyResourcesCaptured: captured,
      lazyShare: Math.round((captured / lazy.length) * 1000) / 1000,
      behaviors: run.behaviors,
      phases: run.phases,
      lazyMissedSample: lazy.filter((url) => !run.captured.has(url)).slice(0, 5).map((url) => url.slice(site.url.length)),
    };
  };
  const withoutRun = await crawlSite(site, ["--behaviors", ""]);
  const withRun = await crawlSite(site, values.withBehaviors === undefined ? [] : ["--behaviors", values.withBehaviors]);
  const without = summary(withoutRun);
  const withBehaviors = summary(withRun);
  // The run with behaviors captures what the run without does, and more: what it left out, if anything.
  const missedWithBehaviors = [...withoutRun.captured].filter((url) => !withRun.captured.has(url)).map((url) => url.slice(site.url.length));
  console.log(JSON.stringify({
    benchmark: "crawl-behaviors",
    pages,
    processes,
    workersPerProcess: workers,
    lazyResources: lazy.length,
    behaviorList: values.withBehaviors ?? "default",
    withoutBehaviors: without,
    withBehaviors,
    capturedWithout: withoutRun.captured.size,
    capturedWith: withRun.captured.size,
    missedWithBehaviors,
    extraSecondsPerPage: Math.round(((withBehaviors.seconds - without.seconds) / pages) * 100) / 100,
    ratioWithToWithout: Math.round((withBehaviors.seconds / without.seconds) * 100) / 100,
    // The same for the pages' own time (summed "total" of the page timings): without the crawl's start and end.
    pageTimeRatio: Math.round(((withBehaviors.phases.total?.seconds ?? 0) / (without.phases.total?.seconds ?? 1)) * 100) / 100,
  }));
}
await site.close();
