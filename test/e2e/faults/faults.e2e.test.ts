import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { closedPort } from "../../helpers/closedPort.js";
import { seededRandom } from "../../helpers/seededRandom.js";

/** FAULTS_SEED=<n> replays the unreachable runs' start schedule (the seed is printed; new each run, so CI runs cover more schedules). */
const SEED = Number(process.env.FAULTS_SEED ?? Math.floor(Math.random() * 1_000_000));
const random = seededRandom(SEED);
/**
 * Runs of the unreachable seed: each is a whole crawler and browser start (most of its CPU) for three failed
 * attempts; the seeded start delays vary the timing between them more than repeating identical batches would.
 */
const UNREACHABLE_RUNS = 12;

let cwd: string;
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-faults-"));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

interface Stats {
  crawled: number;
  failed: number;
  failedAttempts: number;
  queued: number;
  pending: number;
  status: string;
  truncated: { count: number; report: string };
}

describe("a crawl ends, whatever fails", () => {
  it(`an unreachable seed with the default retries ends with exit 9 (all seeds failed), ${UNREACHABLE_RUNS} runs`, async () => {
    const port = await closedPort();
    const seed = `http://127.0.0.1:${port}/`;
    // The race this guards against depends on timing, so the runs vary it: four at a time, each started at a
    // seeded moment within the span of a run's retry waits (1 s, then 2 s), so that launches, failed attempts
    // and exits overlap at a different phase in each run instead of in lockstep batches.
    const starts = Array.from({ length: UNREACHABLE_RUNS }, () => Math.floor(random() * 3000));
    console.log(`unreachable runs: FAULTS_SEED=${SEED}, start delays ${JSON.stringify(starts)} ms`);
    const results: { code: number | null; seconds: number; stats: Stats }[] = [];
    const together = 4;
    let next = 0;
    const runOne = async (run: number) => {
      await new Promise((r) => setTimeout(r, starts[run]));
      const started = Date.now();
      const statsFile = join(cwd, `unreachable-${run}.json`);
      const result = await runCli("crawl", ["--url", seed, "--cwd", cwd, "--collection", `unreachable-${run}`, "--statsFilename", statsFile], { timeoutMs: 90_000 });
      expect(result.stderr.trim().split("\n").pop()).toContain(`no page could be crawled: ${seed} failed: net::ERR_CONNECTION_REFUSED`);
      results[run] = { code: result.code, seconds: (Date.now() - started) / 1000, stats: JSON.parse(readFileSync(statsFile, "utf8")) as Stats };
    };
    await Promise.all(Array.from({ length: together }, async () => {
      while (next < UNREACHABLE_RUNS) await runOne(next++);
    }));
    expect(results.map((r) => r.code)).toEqual(starts.map(() => 9));
    // Three attempts (default --maxPageRetries 2), all counted, nothing left queued or leased.
    for (const { stats } of results) expect(stats).toMatchObject({ crawled: 0, failed: 1, failedAttempts: 3, queued: 0, pending: 0, status: "failed" });
    // Retries wait 1 s, then 2 s: a run takes seconds, never minutes.
    expect(Math.max(...results.map((r) => r.seconds))).toBeLessThan(60);
  }, 600_000);

  // Ten pages, three of which misbehave: the other worker crawls the rest while one waits on the silent page;
  // the faults, not the page count, are the point.
  const PAGES = 10;
  const ERROR_500 = "/page/7";
  const CUT_OFF = "/page/3";
  const SILENT = "/page/9";
  describe(`a ${PAGES}-page site where one page answers 500, one is cut off mid-body and one never answers`, () => {
    let site: FaultySite;
    beforeAll(async () => {
      site = await startFaultySite(PAGES, { [ERROR_500]: "error-500", [CUT_OFF]: "cut-off", [SILENT]: "silent" });
    });
    afterAll(() => site.close());

    it("ends with exit 0; the cut-off page is stored marked truncated, the silent one failed with its reason", async () => {
      const statsFile = join(cwd, "faulty.json");
      // Default retries and delays; only the page timeout is shortened so the silent page fails in seconds.
      const result = await runCli(
        "crawl",
        ["--url", `${site.url}/`, "--cwd", cwd, "--collection", "faulty", "--pageLoadTimeout", "5", "--netIdleWait", "2", "--workers", "2", "--statsFilename", statsFile],
        { timeoutMs: 300_000 },
      );
      expect(result.code).toBe(0);
      const stats = JSON.parse(readFileSync(statsFile, "utf8")) as Stats;
      // The seed and its pages: the 500 page is a capture of what the server said; the cut-off one is kept, marked.
      expect(stats).toMatchObject({ crawled: PAGES, failed: 1, queued: 0, pending: 0, status: "done" });
      // Each misbehaving page was tried three times (default --maxPageRetries 2).
      expect(site.hits.get(CUT_OFF)).toBeGreaterThanOrEqual(3);
      expect(site.hits.get(SILENT)).toBeGreaterThanOrEqual(3);
      expect(stats.failedAttempts).toBe(2 + 3);
      expect(stats.truncated.count).toBe(1);
      expect(readFileSync(stats.truncated.report, "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { url: string }).url)).toEqual([`${site.url}${CUT_OFF}`]);
      const failedLine = logLines(result.stderr).find((l) => l.message === "page failed");
      expect(failedLine?.details).toMatchObject({ url: `${site.url}${SILENT}` });
      expect(String(failedLine?.details.error)).toMatch(/timeout|did not finish|Timeout/i);
      const pages = ["pages.jsonl", "extraPages.jsonl"]
        .flatMap((f) => readFileSync(join(cwd, "collections", "faulty", "pages", f), "utf8").trim().split("\n").slice(1))
        .map((l) => JSON.parse(l) as { url: string; status: number });
      expect(pages.map((p) => p.url).sort()).toEqual(site.pagePaths.filter((p) => p !== SILENT).map((p) => `${site.url}${p}`).sort());
      expect(pages.find((p) => p.url.endsWith(ERROR_500))?.status).toBe(500);
    }, 320_000);

    it("the first SIGTERM ends the crawl within --pageLoadTimeout of the page that never answers", async () => {
      const child = spawn(process.execPath, ["dist/src/cli/crawl.js", "--url", `${site.url}${SILENT}`, "--url", `${site.url}/page/1`, "--cwd", cwd, "--collection", "sigterm", "--pageLoadTimeout", "8", "--workers", "1", "--statsFilename", join(cwd, "sigterm.json")], { cwd: join(import.meta.dirname, "../../..") });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
      // Wait until the silent page is being loaded, then ask once.
      const hitsBefore = site.hits.get(SILENT) ?? 0;
      for (let i = 0; i < 300 && (site.hits.get(SILENT) ?? 0) === hitsBefore; i++) await new Promise((r) => setTimeout(r, 100));
      const signalled = Date.now();
      child.kill("SIGTERM");
      const code = await exited;
      const seconds = (Date.now() - signalled) / 1000;
      expect(code).toBe(11);
      // 8 s of grace for the in-flight page, then the page phase closes; packaging a tiny crawl is quick.
      expect(seconds).toBeLessThan(8 + 15);
      const stats = JSON.parse(readFileSync(join(cwd, "sigterm.json"), "utf8")) as Stats;
      // The abandoned page went back to the queue (not failed), with /page/1: a resume crawls both.
      expect(stats).toMatchObject({ status: "interrupted", failed: 0, pending: 0, queued: 2 });
      expect(logLines(stderr).some((l) => l.message.includes("handing them back"))).toBe(true);
    }, 120_000);
  });
});
