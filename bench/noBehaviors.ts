/**
 * Crawl without behaviors, an older build against this one, alternated in one invocation: prints one JSON
 * line per site with the seconds of each run, their ratio (new / old, of the medians), the CPU seconds of
 * each crawl's process tree (crawler + Chromium, from /usr/bin/time), and the requests that reached the
 * site's server.
 *   node dist/bench/noBehaviors.js [--old /work/wt/old] [--new <checkout>] [--rounds 3] [--sites fixture,rust] [--limit 60]
 *     [--workers 4] [--phases] [--cpuProf]
 * --old (or $OLD_BUILD): a checkout of the older build, built (its dist/src/cli/crawl.js is run); --new: the
 * same for the newer one (default: this build).
 * Sites: "fixture" (fixtures/site, the test site), "rust" (Debian's rust-doc std docs,
 * /usr/share/doc/rust-doc/html, served as nginx would: skipped when not installed), "generated" (60
 * generated pages, bench/lib/generatedSite.ts). Each crawl: --behaviors "" --limit 60 --workers 4
 * --scopeType prefix; rounds alternate which build goes first.
 * --phases: one more run of this build per site with debug page timings, summed per phase (not timed).
 * --cpuProf: one more run of each build per site under node --cpu-prof: the crawler's top self time.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startFixtureServer } from "../fixtures/server.js";
import { PAGE_TIMINGS_MESSAGE } from "../src/page/pageTimings.js";
import { topSelfTime, type ProfileItem } from "./lib/cpuProfile.js";
import { startGeneratedSite } from "./lib/generatedSite.js";
import { startStaticSite } from "./lib/staticSite.js";

const RUST_DOCS = "/usr/share/doc/rust-doc/html";

const { values } = parseArgs({
  options: {
    old: { type: "string", default: process.env.OLD_BUILD ?? "/work/wt/old" },
    new: { type: "string" },
    rounds: { type: "string", default: "3" },
    sites: { type: "string", default: "fixture,rust" },
    limit: { type: "string", default: "60" },
    workers: { type: "string", default: "4" },
    phases: { type: "boolean", default: false },
    cpuProf: { type: "boolean", default: false },
  },
});
const builds = {
  old: join(resolve(values.old), "dist", "src", "cli", "crawl.js"),
  new: values.new ? join(resolve(values.new), "dist", "src", "cli", "crawl.js") : fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url)),
};
if (!existsSync(builds.old)) throw new Error(`no old build at ${builds.old} (build it, or give --old)`);
type Build = keyof typeof builds;

interface Site {
  name: string;
  seed: string;
  /** Requests that reached the server since the last reset. */
  requests(): number;
  reset(): void;
  close(): Promise<void>;
}

async function openSite(name: string): Promise<Site | null> {
  if (name === "fixture") {
    const server = await startFixtureServer();
    return { name, seed: `${server.url}/site/index.html`, requests: () => server.requests.length, reset: () => server.resetCounters(), close: () => server.close() };
  }
  if (name === "rust") {
    if (!existsSync(join(RUST_DOCS, "std", "index.html"))) return null;
    const server = await startStaticSite(RUST_DOCS);
    return { name, seed: `${server.url}/std/index.html`, requests: () => server.requests, reset: () => server.resetCounters(), close: () => server.close() };
  }
  if (name === "generated") {
    const server = await startGeneratedSite(Number(values.limit));
    let base = 0;
    // The generated site counts bytes only.
    return { name, seed: `${server.url}/page/0.html`, requests: () => server.bytesServed - base, reset: () => (base = server.bytesServed), close: () => server.close() };
  }
  throw new Error(`unknown site ${name}`);
}

interface Run {
  code: number;
  seconds: number;
  cpuSeconds: number;
  crawled: number;
  requests: number;
}

/** One crawl of `site` by `build`; extra node flags (--cpu-prof) and crawl flags (debug logging) optional. */
async function crawl(build: Build, site: Site, options: { nodeFlags?: string[]; crawlFlags?: string[] } = {}): Promise<Run & { cwd: string }> {
  const cwd = mkdtempSync(join(tmpdir(), `bench-nobehaviors-${build}-`));
  site.reset();
  const started = process.hrtime.bigint();
  const child = spawn("/usr/bin/time", ["-f", "%U %S", "-o", join(cwd, "time.txt"), process.execPath, ...(options.nodeFlags ?? []), builds[build],
    "--url", site.seed, "--collection", "bench", "--cwd", cwd, "--behaviors", "", "--limit", values.limit, "--workers", values.workers,
    "--scopeType", "prefix", "--statsFilename", join(cwd, "stats.json"), ...(options.crawlFlags ?? [])],
    { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const code = await new Promise<number>((done) => child.on("exit", (c) => done(c ?? -1)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (code !== 0) process.stderr.write(`${build} crawl of ${site.name} exited ${code}: ${stderr.slice(-1500)}\n`);
  const [user, system] = readFileSync(join(cwd, "time.txt"), "utf8").trim().split("\n").pop()!.split(" ").map(Number);
  let crawled = -1;
  try {
    crawled = (JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8")) as { crawled: number }).crawled;
  } catch {
    // no stats: the exit code says why
  }
  return { code, seconds: round(seconds), cpuSeconds: round(user + system), crawled, requests: site.requests(), cwd };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** The "page timings" debug lines of a crawl, summed per phase (seconds) over its pages. */
function phaseSeconds(cwd: string): Record<string, number> {
  const sums: Record<string, number> = {};
  const logs = join(cwd, "collections", "bench", "logs");
  for (const file of readdirSync(logs)) {
    for (const line of readFileSync(join(logs, file), "utf8").split("\n")) {
      if (!line.includes(PAGE_TIMINGS_MESSAGE)) continue;
      const entry = JSON.parse(line) as { message: string; details: { ms?: Record<string, number> } };
      if (entry.message !== PAGE_TIMINGS_MESSAGE) continue;
      sums.pages = (sums.pages ?? 0) + 1;
      for (const [phase, ms] of Object.entries(entry.details.ms ?? {})) sums[phase] = round((sums[phase] ?? 0) + ms / 1000);
    }
  }
  return sums;
}

async function profiled(build: Build, site: Site): Promise<{ seconds: number; top: ProfileItem[] }> {
  const dir = mkdtempSync(join(tmpdir(), "bench-nobehaviors-prof-"));
  const run = await crawl(build, site, { nodeFlags: ["--cpu-prof", "--cpu-prof-dir", dir] });
  rmSync(run.cwd, { recursive: true, force: true });
  const top = topSelfTime(dir, 12);
  rmSync(dir, { recursive: true, force: true });
  return { seconds: run.seconds, top };
}

for (const name of values.sites.split(",")) {
  const site = await openSite(name);
  if (!site) {
    console.log(JSON.stringify({ benchmark: "noBehaviors", site: name, skipped: "not installed" }));
    continue;
  }
  const runs: Record<Build, Run[]> = { old: [], new: [] };
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const build of (round % 2 ? ["new", "old"] : ["old", "new"]) as Build[]) {
      const { cwd, ...run } = await crawl(build, site);
      rmSync(cwd, { recursive: true, force: true });
      runs[build].push(run);
    }
  }
  const result: Record<string, unknown> = {
    benchmark: "noBehaviors",
    site: name,
    seed: site.seed,
    old: runs.old.map((r) => r.seconds),
    new: runs.new.map((r) => r.seconds),
    ratio: round(median(runs.new.map((r) => r.seconds)) / median(runs.old.map((r) => r.seconds))),
    cpuSeconds: { old: runs.old.map((r) => r.cpuSeconds), new: runs.new.map((r) => r.cpuSeconds) },
    requests: { old: runs.old.map((r) => r.requests), new: runs.new.map((r) => r.requests) },
    crawled: { old: runs.old.map((r) => r.crawled), new: runs.new.map((r) => r.crawled) },
    exitCodes: { old: runs.old.map((r) => r.code), new: runs.new.map((r) => r.code) },
  };
  if (name === "generated") result.requests = { note: "bytes served", ...(result.requests as object) };
  if (values.phases) {
    const run = await crawl("new", site, { crawlFlags: ["--logLevel", "debug", "--context", "page"] });
    result.phases = { seconds: run.seconds, ...phaseSeconds(run.cwd) };
    rmSync(run.cwd, { recursive: true, force: true });
  }
  if (values.cpuProf) result.cpuProfile = { old: await profiled("old", site), new: await profiled("new", site) };
  console.log(JSON.stringify(result));
  await site.close();
}
