/**
 * What durable writes (issue 28 item 9) cost a real crawl, per page: the same crawl (no behaviors) with the
 * WARC writer's fdatasync group commit on and off (CRAWLER_TEST_NO_DURABLE_WRITES=1), on the disk and on
 * tmpfs, rounds alternating which goes first. Prints one JSON line per site and folder: per mode the
 * seconds of each run, and of the median run the seconds per page, fsyncs per page (the crawler's
 * CRAWLER_TEST_SYNC_LOG lines: the WARC writer's group commits and the sync of each WARC file as it closes,
 * and the page lists' syncs) and WARC records per WARC fsync; and the folder's fdatasync latency, times the extra fsyncs per page: what the syncs take per page
 * (the wall-clock difference drowns in the seconds a page takes to load).
 *   node dist/bench/durablePages.js [--rounds 3] [--sites fixture,generated] [--dirs /tmp,/dev/shm] [--limit 60] [--workers 4]
 * Sites: "fixture" (fixtures/site, the test site), "generated" (bench/lib/generatedSite.ts: a page, its image
 * and the shared stylesheet). --dirs: where the crawls write (--cwd), one JSON line each.
 */
import { spawn } from "node:child_process";
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { WARCParser } from "warcio";
import { startFixtureServer } from "../fixtures/server.js";
import { SEED_PATH } from "../fixtures/site-manifest.js";
import { startGeneratedSite } from "./lib/generatedSite.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    sites: { type: "string", default: "fixture,generated" },
    dirs: { type: "string", default: "/tmp,/dev/shm" },
    limit: { type: "string", default: "60" },
    workers: { type: "string", default: "4" },
  },
});
const CRAWL = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));
type Mode = "durable" | "plain";

interface Run {
  seconds: number;
  pages: number;
  /** fdatasyncs of WARC files (group commits and closes) and of page lists. */
  warcSyncs: number;
  pageListSyncs: number;
  records: number;
}

async function openSite(name: string): Promise<{ seed: string; close(): Promise<void> }> {
  if (name === "fixture") {
    const server = await startFixtureServer();
    return { seed: `${server.url}${SEED_PATH}`, close: () => server.close() };
  }
  if (name === "generated") {
    const server = await startGeneratedSite(Number(values.limit));
    return { seed: `${server.url}/page/0.html`, close: () => server.close() };
  }
  throw new Error(`unknown site ${name}`);
}

/** WARC records in a folder's .warc.gz files (warcinfo records included). */
async function countRecords(archiveDir: string): Promise<number> {
  let records = 0;
  for (const file of readdirSync(archiveDir).filter((f) => f.endsWith(".warc.gz"))) {
    for await (const record of new WARCParser(createReadStream(join(archiveDir, file)))) {
      await record.skipFully();
      records += 1;
    }
  }
  return records;
}

async function crawl(seed: string, dir: string, mode: Mode): Promise<Run> {
  const cwd = mkdtempSync(join(dir, `bench-durable-pages-${mode}-`));
  const syncLog = join(cwd, "sync.log");
  const env = { ...process.env, CRAWLER_TEST_SYNC_LOG: syncLog, ...(mode === "plain" ? { CRAWLER_TEST_NO_DURABLE_WRITES: "1" } : {}) };
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [CRAWL, "--url", seed, "--collection", "bench", "--cwd", cwd, "--behaviors", "", "--limit", values.limit,
    "--workers", values.workers, "--scopeType", "prefix", "--statsFilename", join(cwd, "stats.json")], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const code = await new Promise<number>((done) => child.on("exit", (c) => done(c ?? -1)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  try {
    if (code !== 0) throw new Error(`crawl exited ${code}: ${stderr.slice(-1500)}`);
    const pages = (JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8")) as { crawled: number }).crawled;
    const synced = existsSync(syncLog) ? readFileSync(syncLog, "utf8").trim().split("\n").filter(Boolean) : [];
    const warcSyncs = synced.filter((l) => l.split(" ")[0]!.endsWith(".warc.gz")).length;
    return { seconds, pages, warcSyncs, pageListSyncs: synced.length - warcSyncs, records: await countRecords(join(cwd, "collections", "bench", "archive")) };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** fdatasync latency of `dir` (ms, median and mean of 200 syncs of 20 KB appends): what each of a page's syncs waits. */
async function syncLatency(dir: string): Promise<{ medianMs: number; meanMs: number }> {
  const path = join(mkdtempSync(join(dir, "bench-durable-pages-probe-")), "probe");
  const handle = await open(path, "w");
  const chunk = Buffer.alloc(20_000, 7);
  const ms: number[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      await handle.write(chunk, 0, chunk.length, i * chunk.length);
      const started = process.hrtime.bigint();
      await handle.datasync();
      ms.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  } finally {
    await handle.close();
    rmSync(dirname(path), { recursive: true, force: true });
  }
  ms.sort((a, b) => a - b);
  return { medianMs: round(ms[ms.length >> 1]!, 3), meanMs: round(ms.reduce((a, b) => a + b, 0) / ms.length, 3) };
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

function summary(runs: Run[]) {
  const median = [...runs].sort((a, b) => a.seconds - b.seconds)[(runs.length - 1) >> 1]!;
  return {
    seconds: runs.map((r) => round(r.seconds)),
    pages: median.pages,
    secondsPerPage: round(median.seconds / median.pages, 3),
    fsyncsPerPage: round((median.warcSyncs + median.pageListSyncs) / median.pages, 2),
    pageListFsyncsPerPage: round(median.pageListSyncs / median.pages, 2),
    recordsPerWarcFsync: median.warcSyncs ? round(median.records / median.warcSyncs, 2) : null,
    records: median.records,
  };
}

for (const name of values.sites.split(",")) {
  const site = await openSite(name);
  for (const dir of values.dirs.split(",")) {
    const runs: Record<Mode, Run[]> = { durable: [], plain: [] };
    for (let r = 0; r < Number(values.rounds); r++) {
      for (const mode of (r % 2 ? ["durable", "plain"] : ["plain", "durable"]) as Mode[]) runs[mode].push(await crawl(site.seed, dir, mode));
    }
    const durable = summary(runs.durable);
    const plain = summary(runs.plain);
    const fdatasync = await syncLatency(dir);
    console.log(JSON.stringify({
      benchmark: "durablePages", site: name, dir, workers: Number(values.workers), durable, plain, fdatasync,
      // Wall clock (noisy: pages take a second and more to load) and what the syncs themselves take per page.
      costSecondsPerPage: round(durable.secondsPerPage - plain.secondsPerPage, 3),
      syncMsPerPage: round((durable.fsyncsPerPage - plain.fsyncsPerPage) * fdatasync.meanMs, 2),
    }));
  }
  await site.close();
}
