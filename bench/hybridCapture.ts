/**
 * Hybrid capture against browser capture, alternated in one invocation: prints one JSON line per site with each
 * mode's wall seconds, CPU seconds of the whole crawl (crawler, embedded Redis, Chromium and every process it
 * starts: bench/lib/treeCpu.ts), pages, CPU seconds per page and share of pages browsed (reports/capture.jsonl),
 * then each page's fidelity and both archives' QA scores.
 *   node dist/bench/hybridCapture.js [--sites template,fixture,rust-book,rust-std,python] [--modes browser,hybrid]
 *     [--rounds 2] [--workers 4] [--limit 300] [--keep DIR] [--noFidelity] [--crawlFlags "--hybridVerifyEvery 20"]
 *     [--rustDocs /usr/share/doc/rust-doc/html] [--pythonDocs /usr/share/doc/python3.11/html]
 * Sites: "template" (fixtures/templateSite.ts), "fixture" (fixtures/site, the demo's site: its dynamic.html's
 * script loads data/items.json and img/dynamic.png), "rust-book" and "rust-std" (Debian's rust-doc: the book from
 * /book/index.html, std from /std/index.html), "python" (Debian's python3.11-doc, from /index.html), the doc
 * folders served as nginx would (bench/lib/staticSite.ts); a doc site whose folder is missing is skipped (the
 * bench installs nothing). Every crawl: default behaviors, --scopeType prefix, --limit, --workers,
 * `--captureMode <mode>` (left out for "browser" only while the crawler has no such flag), then --crawlFlags.
 * Rounds alternate which mode goes first.
 * Fidelity: one more crawl per mode (untimed) with --qa, whose urn:pageinfo: records say which URLs each page
 * requested and whose qa.json scores the archive. A page's set in an archive is the URLs its pageinfo names that
 * the archive stores (a response or revisit record); fidelity = |hybrid's set ∩ browser's set| / |browser's set|,
 * and, as a second figure, |URLs the hybrid archive stores anywhere ∩ browser's set| / |browser's set| (what
 * replay of the page can find). With --modes browser alone the browser run is compared with a second browser
 * run: the run-to-run floor. Pages below 0.99 are listed with the URLs they lack. A page the candidate run never
 * crawled (under --limit the two runs may reach different pages) is counted apart (notCrawledByCandidate), not scored.
 * --keep DIR: each crawl's collection is kept as DIR/<site>-<mode>-<run>.
 */
import { execFileSync } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { WARCParser } from "warcio";
import { startFixtureServer } from "../fixtures/server.js";
import { startTemplateSite, TEMPLATE_SITE_PAGES } from "../fixtures/templateSite.js";
import { startStaticSite } from "./lib/staticSite.js";
import { runWithTreeCpu } from "./lib/treeCpu.js";

const { values } = parseArgs({
  options: {
    sites: { type: "string", default: "template,fixture,rust-book,rust-std,python" },
    modes: { type: "string", default: "browser,hybrid" },
    rounds: { type: "string", default: "2" },
    workers: { type: "string", default: "4" },
    limit: { type: "string", default: "300" },
    keep: { type: "string" },
    noFidelity: { type: "boolean", default: false },
    crawlFlags: { type: "string", default: "" },
    rustDocs: { type: "string", default: "/usr/share/doc/rust-doc/html" },
    pythonDocs: { type: "string", default: "/usr/share/doc/python3.11/html" },
  },
});
const CRAWL = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));
const MODES = values.modes.split(",").filter(Boolean);
const EXTRA_FLAGS = values.crawlFlags.split(/\s+/).filter(Boolean);
const FIDELITY_THRESHOLD = 0.99;

/** Whether this build's crawl knows --captureMode (until it does, "browser" runs without the flag). */
const HAS_CAPTURE_MODE = execFileSync(process.execPath, [CRAWL, "--help"], { encoding: "utf8" }).includes("--captureMode");
for (const mode of MODES) {
  if (mode !== "browser" && !HAS_CAPTURE_MODE) throw new Error(`this build's crawl has no --captureMode: cannot run mode ${mode}`);
}

interface Site {
  name: string;
  seed: string;
  close(): Promise<void>;
}

async function openSite(name: string): Promise<Site | null> {
  if (name === "template") {
    const site = await startTemplateSite();
    return { name, seed: site.url + TEMPLATE_SITE_PAGES[0], close: () => site.close() };
  }
  if (name === "fixture") {
    const server = await startFixtureServer();
    return { name, seed: `${server.url}/site/index.html`, close: () => server.close() };
  }
  const docs: Record<string, { root: string; seed: string }> = {
    "rust-book": { root: values.rustDocs, seed: "/book/index.html" },
    "rust-std": { root: values.rustDocs, seed: "/std/index.html" },
    python: { root: values.pythonDocs, seed: "/index.html" },
  };
  const doc = docs[name];
  if (!doc) throw new Error(`unknown site ${name} (template, fixture, rust-book, rust-std, python)`);
  const root = resolve(doc.root);
  if (!existsSync(join(root, doc.seed))) return null;
  const site = await startStaticSite(root);
  return { name, seed: site.url + doc.seed, close: () => site.close() };
}

interface Run {
  mode: string;
  label: string;
  code: number;
  seconds: number;
  cpuSeconds: number;
  pages: number;
  cpuSecondsPerPage: number | null;
  /** From reports/capture.jsonl; null when the crawl wrote none. */
  capture: { lines: number; browser: number; static: number; browsedShare: number; byPurpose: Record<string, number> } | null;
  lingering: number;
}

function round(n: number, places = 2): number {
  const f = 10 ** places;
  return Math.round(n * f) / f;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function readJsonLines(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8").split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
}

function captureReport(collection: string): Run["capture"] {
  const file = join(collection, "reports", "capture.jsonl");
  if (!existsSync(file)) return null;
  const lines = readJsonLines(file);
  const count = (capture: string) => lines.filter((l) => l.capture === capture).length;
  const byPurpose: Record<string, number> = {};
  for (const line of lines) {
    const purpose = typeof line.purpose === "string" ? line.purpose : "none";
    byPurpose[purpose] = (byPurpose[purpose] ?? 0) + 1;
  }
  const [browser, statics] = [count("browser"), count("static")];
  return { lines: lines.length, browser, static: statics, browsedShare: browser + statics ? round(browser / (browser + statics), 3) : NaN, byPurpose };
}

/** Pages the collection lists (pages.jsonl, extraPages.jsonl). */
function listedPages(collection: string): string[] {
  return ["pages.jsonl", "extraPages.jsonl"].flatMap((f) => readJsonLines(join(collection, "pages", f))).map((p) => p.url).filter((u): u is string => typeof u === "string");
}

/** One crawl of `site` in `mode`; `fidelity` adds --qa (pageinfo records, QA scores). Returns the run and its collection folder. */
async function crawl(site: Site, mode: string, label: string, fidelity: boolean): Promise<{ run: Run; collection: string; cwd: string }> {
  const cwd = mkdtempSync(join(tmpdir(), `bench-hybrid-${site.name}-${mode}-`));
  const flags = ["--url", site.seed, "--collection", "bench", "--cwd", cwd, "--workers", values.workers, "--limit", values.limit, "--scopeType", "prefix",
    "--statsFilename", join(cwd, "stats.json"), ...(mode !== "browser" || HAS_CAPTURE_MODE ? ["--captureMode", mode] : []), ...(fidelity ? ["--qa"] : []), ...EXTRA_FLAGS];
  const usage = await runWithTreeCpu(process.execPath, [CRAWL, ...flags]);
  if (usage.code !== 0) process.stderr.write(`${mode} crawl of ${site.name} (${label}) exited ${usage.code}: ${usage.stderrTail.slice(-1500)}\n`);
  const collection = join(cwd, "collections", "bench");
  let pages = listedPages(collection).length;
  try {
    pages = (JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8")) as { crawled: number }).crawled;
  } catch {
    // no stats: the listed pages
  }
  const cpuSeconds = usage.userSeconds + usage.systemSeconds;
  const run: Run = {
    mode, label, code: usage.code, seconds: round(usage.wallSeconds), cpuSeconds: round(cpuSeconds), pages,
    cpuSecondsPerPage: pages > 0 ? round(cpuSeconds / pages, 3) : null, capture: captureReport(collection), lingering: usage.lingering,
  };
  return { run, collection, cwd };
}

function finish(result: { collection: string; cwd: string }, site: Site, mode: string, label: string): void {
  if (values.keep) {
    mkdirSync(values.keep, { recursive: true });
    const target = join(values.keep, `${site.name}-${mode}-${label}`);
    rmSync(target, { recursive: true, force: true });
    if (existsSync(result.collection)) renameSync(result.collection, target);
  }
  rmSync(result.cwd, { recursive: true, force: true });
}

/** What an archive holds: every URL it stores, and each page's requested URLs (its urn:pageinfo: record). */
interface ArchiveContents {
  stored: Set<string>;
  pageRequests: Map<string, string[]>;
}

async function archiveContents(collection: string): Promise<ArchiveContents> {
  const stored = new Set<string>();
  const pageRequests = new Map<string, string[]>();
  const archive = join(collection, "archive");
  if (!existsSync(archive)) return { stored, pageRequests };
  for (const file of readdirSync(archive).sort()) {
    for await (const record of new WARCParser(createReadStream(join(archive, file)))) {
      const target = record.warcTargetURI;
      if (!target) continue;
      if (record.warcType === "response" || record.warcType === "revisit") stored.add(target);
      else if (record.warcType === "resource" && target.startsWith("urn:pageinfo:")) {
        const info = JSON.parse(await record.contentText()) as { url?: string; urls?: Record<string, unknown> };
        pageRequests.set(info.url ?? target.slice("urn:pageinfo:".length), Object.keys(info.urls ?? {}));
      }
    }
  }
  return { stored, pageRequests };
}

/** A page's URL set in an archive: what its pageinfo names that the archive stores; null without pageinfo. */
function pageSet(archive: ArchiveContents, page: string): Set<string> | null {
  const requested = archive.pageRequests.get(page);
  return requested ? new Set(requested.filter((u) => archive.stored.has(u))) : null;
}

interface PageFidelity {
  page: string;
  /** Against the page's own set in the other archive (its pageinfo); null when that archive has no pageinfo for it. */
  fidelity: number | null;
  /** Against everything the other archive stores. */
  archiveFidelity: number;
  missing: string[];
}

function compare(reference: ArchiveContents, candidate: ArchiveContents, referencePages: string[]): { pages: PageFidelity[]; summary: Record<string, unknown> } {
  const pages: PageFidelity[] = [];
  // Under --limit the two crawls may reach different pages: one the candidate never crawled is counted apart.
  const notCrawled: string[] = [];
  for (const page of referencePages) {
    const expected = pageSet(reference, page);
    if (!expected || !expected.size) continue;
    if (!candidate.pageRequests.has(page) && !candidate.stored.has(page)) {
      notCrawled.push(page);
      continue;
    }
    const own = pageSet(candidate, page);
    const share = (have: (u: string) => boolean) => [...expected].filter(have).length / expected.size;
    const fidelity = own ? share((u) => own.has(u)) : null;
    const archiveFidelity = share((u) => candidate.stored.has(u));
    const missing = [...expected].filter((u) => !(own ? own.has(u) : candidate.stored.has(u))).sort();
    pages.push({ page, fidelity: fidelity === null ? null : round(fidelity, 4), archiveFidelity: round(archiveFidelity, 4), missing });
  }
  const figures = (xs: number[]) => (xs.length ? { min: round(Math.min(...xs), 4), median: round(median(xs), 4) } : null);
  const withPageinfo = pages.filter((p) => p.fidelity !== null).map((p) => p.fidelity!);
  const below = pages.filter((p) => (p.fidelity ?? p.archiveFidelity) < FIDELITY_THRESHOLD).sort((a, b) => (a.fidelity ?? a.archiveFidelity) - (b.fidelity ?? b.archiveFidelity));
  return {
    pages,
    summary: {
      pages: pages.length,
      notCrawledByCandidate: { count: notCrawled.length, first: notCrawled.sort().slice(0, 10) },
      pagesWithoutPageinfo: pages.length - withPageinfo.length,
      fidelity: figures(withPageinfo),
      archiveFidelity: figures(pages.map((p) => p.archiveFidelity)),
      below: below.map(({ page, fidelity, archiveFidelity, missing }) => ({ page, fidelity, archiveFidelity, missing })),
    },
  };
}

interface QaJson {
  pages: number;
  below: { url: string; overall: number }[];
  results: { url: string; scores: { screenshot: number | null; text: number | null; resources: number; overall: number } }[];
}

function qaScores(collection: string): Record<string, unknown> | null {
  const file = join(collection, "qa.json");
  if (!existsSync(file)) return null;
  const qa = JSON.parse(readFileSync(file, "utf8")) as QaJson;
  const figures = (pick: (s: QaJson["results"][number]["scores"]) => number | null) => {
    const xs = qa.results.map((r) => pick(r.scores)).filter((x): x is number => x !== null);
    return xs.length ? { min: round(Math.min(...xs), 4), median: round(median(xs), 4), mean: round(xs.reduce((a, b) => a + b, 0) / xs.length, 4) } : null;
  };
  return {
    pages: qa.pages,
    overall: figures((s) => s.overall),
    screenshot: figures((s) => s.screenshot),
    text: figures((s) => s.text),
    resources: figures((s) => s.resources),
    belowThreshold: qa.below.map((b) => ({ url: b.url, overall: round(b.overall, 4) })),
  };
}

function modeFigures(runs: Run[]): Record<string, number> {
  const perPage = runs.map((r) => r.cpuSecondsPerPage).filter((x): x is number => x !== null);
  return { seconds: round(median(runs.map((r) => r.seconds))), cpuSeconds: round(median(runs.map((r) => r.cpuSeconds))), pages: median(runs.map((r) => r.pages)), cpuSecondsPerPage: round(median(perPage), 3) };
}

for (const name of values.sites.split(",").filter(Boolean)) {
  const site = await openSite(name);
  if (!site) {
    console.log(JSON.stringify({ benchmark: "hybridCapture", site: name, skipped: "not installed" }));
    continue;
  }
  const runs: Record<string, Run[]> = Object.fromEntries(MODES.map((m) => [m, []]));
  for (let r = 0; r < Number(values.rounds); r++) {
    for (const mode of r % 2 ? [...MODES].reverse() : MODES) {
      const result = await crawl(site, mode, `round${r + 1}`, false);
      runs[mode].push(result.run);
      finish(result, site, mode, `round${r + 1}`);
    }
  }
  const result: Record<string, unknown> = {
    benchmark: "hybridCapture",
    site: name,
    seed: site.seed,
    workers: Number(values.workers),
    limit: Number(values.limit),
    crawlFlags: EXTRA_FLAGS,
    captureModeFlag: HAS_CAPTURE_MODE,
    runs,
    median: Object.fromEntries(MODES.map((m) => [m, modeFigures(runs[m])])),
  };
  if (runs.browser?.length && runs.hybrid?.length) {
    const [browser, hybrid] = [modeFigures(runs.browser), modeFigures(runs.hybrid)];
    result.cpuPerPageRatio = round(browser.cpuSecondsPerPage / hybrid.cpuSecondsPerPage);
    result.wallRatio = round(browser.seconds / hybrid.seconds);
  }
  if (!values.noFidelity && MODES.includes("browser")) {
    // The reference is the browser's archive; the candidate is hybrid's, or a second browser run.
    const candidateMode = MODES.find((m) => m !== "browser") ?? "browser";
    const reference = await crawl(site, "browser", "fidelity", true);
    const candidate = await crawl(site, candidateMode, candidateMode === "browser" ? "fidelity-again" : "fidelity", true);
    const [referenceArchive, candidateArchive] = [await archiveContents(reference.collection), await archiveContents(candidate.collection)];
    const { summary } = compare(referenceArchive, candidateArchive, listedPages(reference.collection));
    result.fidelity = {
      against: candidateMode === "browser" ? "a second browser run (the run-to-run floor)" : candidateMode,
      runs: [reference.run, candidate.run],
      ...summary,
    };
    result.qa = { browser: qaScores(reference.collection), [candidateMode === "browser" ? "browserAgain" : candidateMode]: qaScores(candidate.collection) };
    finish(reference, site, "browser", "fidelity");
    finish(candidate, site, candidateMode, candidateMode === "browser" ? "fidelity-again" : "fidelity");
  }
  console.log(JSON.stringify(result));
  await site.close();
}
