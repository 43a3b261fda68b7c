/**
 * Packaging never writes an incomplete relation.requires nor leaves records out silently: a WACZ a
 * crawl's revisits depend on that lost its finished index entry (removed meanwhile), or a WARC file gone
 * from the archive folder, fails the crawl (exit 1) and it is not committed. Each fault is made while the
 * crawler waits at its test pause point before packaging.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { SEED_PATH } from "../../../fixtures/site-manifest.js";
import { NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

let site: FixtureServer;
let redis: TestRedis;
let cwd: string;

const crawlArgs = (name: string) => ["--url", site.url + SEED_PATH, "--collection", name, "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ",
  "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--workers", "2"];

/** Crawl, and while it waits before packaging, do `fault`; resolves with its exit code and log. */
function crawlWithFault(name: string, fault: () => Promise<void>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...crawlArgs(name)], {
      stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, CRAWLER_TEST_PAUSE_AT: "before-package", CRAWLER_TEST_PAUSE_MS: "5000" },
    });
    let stderr = "";
    let faulted = false;
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (!faulted && stderr.includes("test pause at before-package")) {
        faulted = true;
        fault().catch(reject);
      }
    });
    child.on("exit", (code) => (faulted ? resolve({ code, stderr }) : reject(new Error(`never paused before packaging: ${stderr.slice(-1500)}`))));
  });
}

beforeAll(async () => {
  site = await startFixtureServer();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-packaging-"));
  const first = await runCli("crawl", crawlArgs("A"));
  if (first.code !== 0) throw new Error(`crawl A failed: ${first.stderr.slice(-1500)}`);
}, 180_000);

afterAll(async () => {
  await site.close();
  await redis.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("packaging refuses to leave out what a WACZ needs", () => {
  it("a required WACZ without a finished index entry fails the crawl: exit 1, not committed", async () => {
    const finished = await redis.client.lindex("c:A:wacz", 0);
    const { code, stderr } = await crawlWithFault("B", async () => {
      // B's revisits point into A.wacz (recorded before they were written)...
      expect(await redis.client.smembers("B:duperefs:B.wacz")).toEqual(["A 0"]);
      // ...which loses its finished entry, as `indexer --remove` would take it away.
      await redis.client.lset("c:A:wacz", 0, JSON.stringify({ filename: "A.wacz" }));
    });
    await redis.client.lset("c:A:wacz", 0, finished!);
    expect(code, stderr.slice(-1500)).toBe(1);
    expect(stderr).toContain("B.wacz depends on WACZ 0 of crawl A, which has no finished entry in the dedupe index");
    expect(await redis.client.sismember("allcrawls", "B")).toBe(0);
    expect(readdirSync(join(cwd, "collections", "B")).filter((f) => f.endsWith(".wacz"))).toEqual([]);
  }, 180_000);

  it("a WARC file gone from the archive folder fails the crawl: exit 1, not committed", async () => {
    const archive = join(cwd, "collections", "C", "archive");
    let removed = "";
    const { code, stderr } = await crawlWithFault("C", async () => {
      removed = readdirSync(archive).filter((f) => f.endsWith(".warc.gz"))[0];
      rmSync(join(archive, removed));
    });
    expect(removed).toMatch(/\.warc\.gz$/);
    expect(code, stderr.slice(-1500)).toBe(1);
    expect(stderr).toContain(`WARC files of C.wacz are not in ${archive}: ${removed}`);
    expect(await redis.client.sismember("allcrawls", "C")).toBe(0);
  }, 180_000);
});
