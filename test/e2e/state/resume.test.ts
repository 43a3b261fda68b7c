import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { EXPECTED_PAGE_PATHS, SEED_PATH } from "../../../fixtures/site-manifest.js";
import { runCli, NO_BEHAVIORS } from "../../helpers/cli.js";
import { httpStatus, readWarcRecords } from "../../helpers/warcFile.js";

let site: FixtureServer;
let cwd: string;
beforeAll(async () => {
  site = await startFixtureServer();
  cwd = mkdtempSync(join(tmpdir(), "crawl-resume-"));
});
afterAll(async () => {
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
});

/** Start a crawl and stop it with `signal` once `pagesBefore` pages are logged as crawled. */
function crawlUntil(args: string[], pagesBefore: number, signal: NodeJS.Signals): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let crawled = 0;
    let sent = false;
    child.stderr.on("data", (chunk: Buffer) => {
      crawled += chunk.toString().split("\n").filter((l) => l.includes('"message":"page crawled"')).length;
      if (!sent && crawled >= pagesBefore) {
        sent = true;
        child.kill(signal);
      }
    });
    child.on("exit", (code) => resolve(code));
  });
}

/** Pages of every WACZ of the collection: a resumed crawl starts a new WACZ (the packaged one is sealed). */
function capturedPages(collectionDir: string): string[] {
  const pagesDir = join(collectionDir, "pages");
  const dirs = [pagesDir, ...readdirSync(pagesDir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(pagesDir, d.name))];
  return dirs.flatMap((d) => ["pages.jsonl", "extraPages.jsonl"].map((f) => join(d, f))).filter((f) => existsSync(f)).flatMap((f) =>
    readFileSync(f, "utf8")
      .trim()
      .split("\n")
      .slice(1)
      .map((l) => new URL((JSON.parse(l) as { url: string }).url).pathname + new URL((JSON.parse(l) as { url: string }).url).search),
  );
}

function storedResponses(collectionDir: string): string[] {
  const archive = join(collectionDir, "archive");
  return readdirSync(archive)
    .flatMap((f) => readWarcRecords(join(archive, f)))
    .filter((r) => r.headers.get("warc-type") === "response")
    .map((r) => `${httpStatus(r)} ${r.headers.get("warc-target-uri")}`);
}

// The two stops are crawled side by side (collections of their own on a site that keeps no state;
// maxConcurrency in vitest.config.ts).
describe.concurrent.each([
  ["SIGINT", 11],
  ["SIGKILL", null],
] as const)("a crawl stopped by %s", (signal, expectedCode) => {
  it("continues when the same command is run again, capturing every page, each response once", async () => {
    const collection = `resume-${signal.toLowerCase()}`;
    const args = ["--url", site.url + SEED_PATH, "--collection", collection, "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ", "--statsFilename", join(cwd, `${collection}.json`)];
    const firstCode = await crawlUntil(args, 3, signal);
    expect(firstCode).toBe(expectedCode);
    const dir = join(cwd, "collections", collection);
    const partial = capturedPages(dir);
    expect(partial.length).toBeGreaterThanOrEqual(3);
    expect(partial.length).toBeLessThan(EXPECTED_PAGE_PATHS.length);

    const second = await runCli("crawl", args);
    expect(second.code, second.stderr.slice(-1500)).toBe(0);
    const stats = JSON.parse(readFileSync(join(cwd, `${collection}.json`), "utf8"));
    expect(stats).toMatchObject({ crawled: EXPECTED_PAGE_PATHS.length, failed: 0, queued: 0, pending: 0 });
    expect([...new Set(capturedPages(dir))].sort()).toEqual([...EXPECTED_PAGE_PATHS].sort());
    const responses = storedResponses(dir);
    expect(responses.length).toBe(new Set(responses).size);
  }, 240_000);
});
