/**
 * Behaviors benchmark: what the behaviors cost on documentation pages that never grow (fixtures/docSites.ts:
 * mdBook-like chapter and print.html, a rustdoc-like struct page, Sphinx-like pages). The site's pages are
 * crawled twice, one worker, with the default behaviors and with `--behaviors ""`, --runs times each; per page
 * shape it prints the autoscroll's time (the page timings' behaviors.Autoscroll, ms), how it ended (rounds,
 * moves, end), the behaviors' time and the page's time with and without behaviors (page timings' total) and
 * their ratio: medians over the runs. Also whether any autoscroll line came after its page was done.
 *   node dist/bench/behaviors.js [--runs 3] [--chapters 20] [--sections 20] [--methods 250]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startDocSite, type DocSite } from "../fixtures/docSites.js";
import { PAGE_TIMINGS_MESSAGE } from "../src/page/pageTimings.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "1" },
    chapters: { type: "string", default: "20" },
    sections: { type: "string", default: "20" },
    methods: { type: "string", default: "250" },
  },
});
const runs = Number(values.runs);
const crawlEntry = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));

interface LogLine {
  message: string;
  context: string;
  details: Record<string, unknown>;
}

interface PageFigures {
  totalMs: number;
  behaviorsMs?: number;
  autoscrollMs?: number;
  autoscroll?: { rounds: number; moves: number; end: string };
}

interface CrawlFigures {
  exitCode: number;
  seconds: number;
  pages: Map<string, PageFigures>;
  /** Autoscroll lines (ended, stopped) logged after their page's "page crawled" line. */
  linesAfterPageDone: number;
}

async function crawl(site: DocSite, behaviors: boolean): Promise<CrawlFigures> {
  const cwd = mkdtempSync(join(tmpdir(), "bench-behaviors-"));
  const seeds = Object.values(site.pages).flatMap((path) => ["--url", site.url + path]);
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [crawlEntry, ...seeds, "--scopeType", "page", "--collection", "bench", "--cwd", cwd, "--workers", "1",
    "--netIdleWait", "2", "--logLevel", "debug", "--context", "page,behavior,behaviorScript", ...(behaviors ? [] : ["--behaviors", ""])], { stdio: ["ignore", "ignore", "pipe"] });
  child.stderr.resume();
  const exitCode = await new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const logsDir = join(cwd, "collections", "bench", "logs");
  const lines: LogLine[] = readdirSync(logsDir).flatMap((f) => readFileSync(join(logsDir, f), "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as LogLine));
  rmSync(cwd, { recursive: true, force: true });
  const pages = new Map<string, PageFigures>();
  const done = new Set<string>();
  let linesAfterPageDone = 0;
  for (const line of lines) {
    const url = String(line.details.url ?? line.details.frame ?? "");
    const path = url.startsWith(site.url) ? url.slice(site.url.length) : url;
    if (line.message === "page crawled") done.add(path);
    if (line.context === "behaviorScript" && /^autoscroll (ended|stopped)/.test(line.message) && done.has(path)) linesAfterPageDone += 1;
    const figures = pages.get(path) ?? { totalMs: 0 };
    if (line.message === PAGE_TIMINGS_MESSAGE) {
      const ms = line.details.ms as Record<string, number>;
      figures.totalMs = ms.total;
      figures.behaviorsMs = ms.behaviors;
      figures.autoscrollMs = (line.details.behaviors as Record<string, number> | undefined)?.Autoscroll;
    }
    if (line.message === "autoscroll ended") {
      const { rounds, moves, end } = line.details as { rounds: number; moves: number; end: string };
      figures.autoscroll = { rounds, moves, end };
    }
    pages.set(path, figures);
  }
  return { exitCode, seconds: Math.round(seconds * 100) / 100, pages, linesAfterPageDone };
}

function median(values: (number | undefined)[]): number | null {
  const known = values.filter((v): v is number => typeof v === "number").sort((a, b) => a - b);
  if (!known.length) return null;
  const middle = Math.floor(known.length / 2);
  return known.length % 2 ? known[middle] : Math.round((known[middle - 1] + known[middle]) / 2);
}

const site = await startDocSite({ chapters: Number(values.chapters), sections: Number(values.sections), methods: Number(values.methods) });
const withRuns: CrawlFigures[] = [];
const withoutRuns: CrawlFigures[] = [];
for (let run = 0; run < runs; run++) {
  // Alternated, so that a change in the machine's load falls on both.
  withRuns.push(await crawl(site, true));
  withoutRuns.push(await crawl(site, false));
}
const pageBytes = async (path: string) => (await (await fetch(site.url + path)).arrayBuffer()).byteLength;
const shapes = [];
for (const [shape, path] of Object.entries(site.pages)) {
  const withMs = median(withRuns.map((r) => r.pages.get(path)?.totalMs));
  const withoutMs = median(withoutRuns.map((r) => r.pages.get(path)?.totalMs));
  shapes.push({
    shape,
    path,
    htmlBytes: await pageBytes(path),
    autoscrollMs: median(withRuns.map((r) => r.pages.get(path)?.autoscrollMs)),
    autoscroll: withRuns.map((r) => r.pages.get(path)?.autoscroll ?? null),
    behaviorsMs: median(withRuns.map((r) => r.pages.get(path)?.behaviorsMs)),
    pageMsWithBehaviors: withMs,
    pageMsWithout: withoutMs,
    ratio: withMs !== null && withoutMs ? Math.round((withMs / withoutMs) * 100) / 100 : null,
  });
}
console.log(JSON.stringify({
  benchmark: "behaviors",
  runs,
  exitCodes: [...withRuns, ...withoutRuns].map((r) => r.exitCode),
  crawlSecondsWithBehaviors: median(withRuns.map((r) => r.seconds * 1000))! / 1000,
  crawlSecondsWithout: median(withoutRuns.map((r) => r.seconds * 1000))! / 1000,
  autoscrollLinesAfterPageDone: withRuns.reduce((sum, r) => sum + r.linesAfterPageDone, 0),
  shapes,
}));
await site.close();
