/**
 * QA benchmark: crawls the QA fixture site (fixtures/qaSite.ts) with --qa, then runs `qa` on its WACZ
 * alone, and prints JSON: each page's scores and missing resources, and the seconds a qa run takes
 * (whole, and per page; a run includes starting Chromium and loading the archive into ReplayWeb.page: the
 * seconds to the first page checked, then the seconds per further page).
 *   node dist/bench/qa.js [--runs 1]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startQaSite } from "../fixtures/qaSite.js";
import type { QaSummary } from "../src/qa/pageResult.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "1" } } });
const cli = (name: string) => fileURLToPath(new URL(`../src/cli/${name}.js`, import.meta.url));

function run(program: string, args: string[]): Promise<{ code: number | null; seconds: number; log: { timestamp: string; message: string }[] }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli(program), ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const log = stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { timestamp: string; message: string });
      resolve({ code, seconds: (Date.now() - started) / 1000, log });
    });
  });
}

/** From a qa run's log: seconds to its first page checked (Chromium, ReplayWeb.page, the archive), then per further page. */
function phases(log: { timestamp: string; message: string }[]): { startAndFirstPage: number; perFurtherPage: number } {
  const at = (entry: { timestamp: string }) => Date.parse(entry.timestamp) / 1000;
  const start = log.find((l) => l.message === "QA started")!;
  const pages = log.filter((l) => l.message === "page checked");
  const round = (n: number) => Math.round(n * 100) / 100;
  return { startAndFirstPage: round(at(pages[0]) - at(start)), perFurtherPage: round((at(pages[pages.length - 1]) - at(pages[0])) / (pages.length - 1)) };
}

const site = await startQaSite();
const cwd = mkdtempSync(join(tmpdir(), "bench-qa-"));
try {
  const crawl = await run("crawl", ["--url", `${site.url}/qa/index.html`, "--cwd", cwd, "--collection", "site", "--qa", "--blockRules", "127\\.0\\.0\\.2", "--behaviors", "", "--logging", "stderr-json"]);
  if (crawl.code !== 0) throw new Error(`crawl exited ${crawl.code}`);
  const wacz = join(cwd, "collections", "site", "site.wacz");
  const runs: { seconds: number; secondsPerPage: number; qaSeconds: number; startAndFirstPage: number; perFurtherPage: number }[] = [];
  for (let i = 0; i < Number(values.runs); i++) {
    const qa = await run("qa", ["--qaSource", wacz, "--cwd", cwd, "--collection", `qa${i}`]);
    if (qa.code !== 0) throw new Error(`qa exited ${qa.code}`);
    const summary = JSON.parse(readFileSync(join(cwd, "collections", `qa${i}`, "qa.json"), "utf8")) as QaSummary;
    runs.push({ seconds: qa.seconds, secondsPerPage: Math.round((qa.seconds / summary.pages) * 100) / 100, qaSeconds: summary.seconds, ...phases(qa.log) });
  }
  const summary = JSON.parse(readFileSync(join(cwd, "collections", "site", "qa.json"), "utf8")) as QaSummary;
  const pages = summary.results.map((r) => {
    const page = JSON.parse(readFileSync(join(cwd, "collections", "site", "qa", `${r.file}.json`), "utf8")) as { missing: string[]; loadSeconds: number };
    const round = (n: number | null) => (n === null ? null : Math.round(n * 1000) / 1000);
    return { page: new URL(r.url).pathname, overall: round(r.scores.overall), screenshot: round(r.scores.screenshot), text: round(r.scores.text), resources: round(r.scores.resources), missing: page.missing.map((u) => u.replace(site.url, "").replace(site.otherUrl, "<other host>")), loadSeconds: page.loadSeconds };
  });
  console.log(JSON.stringify({ pages: summary.pages, crawlWithQaSeconds: crawl.seconds, crawlQaSeconds: summary.seconds, qaRuns: runs, scores: pages }));
} finally {
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
}
