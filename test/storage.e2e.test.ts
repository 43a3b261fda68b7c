import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../bench/lib/generatedSite.js";
import { runCli, NO_BEHAVIORS } from "./helpers/cli.js";
import { startTestRedis, type TestRedis } from "./helpers/redis.js";
import { readWarcRecords } from "./helpers/warcFile.js";

let site: GeneratedSite;
let redis: TestRedis;
// Made at load time: the tiny disk's mount decides whether a test runs.
const dir = mkdtempSync(join(tmpdir(), "crawl-storage-"));

/** A 150 KB file system, so the disk really fills up (needs root to mount; skipped otherwise). */
function mountTinyDisk(path: string): boolean {
  mkdirSync(path, { recursive: true });
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=150k", "tmpfs", path], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  site = await startGeneratedSite(200);
  redis = await startTestRedis();
});
afterAll(async () => {
  await site.close();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("storage failures", () => {
  it("an output folder that cannot be created: one clear line, exit 1", async () => {
    const notADir = join(dir, "file");
    writeFileSync(notADir, "x");
    const result = await runCli("crawl", ["--url", `${site.url}/page/0.html`, "--cwd", notADir, ...NO_BEHAVIORS, "--collection", "c"]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n").pop()).toMatch(/^crawl: cannot create the output folder .*file\/collections\/c: /);
  });

  const disk = join(dir, "tiny");
  const mounted = mountTinyDisk(disk);
  it.skipIf(!mounted)("a full disk stops the crawl with a clear error; the WARC files stay whole, no broken WACZ", async () => {
    try {
      const result = await runCli("crawl", [
        "--url", `${site.url}/page/0.html`, "--cwd", disk, ...NO_BEHAVIORS, "--collection", "full", "--generateWACZ", "--netIdleWait", "1",
        "--redisStoreUrl", redis.url,
      ]);
      expect(result.code).toBe(3);
      expect(result.stderr.trim().split("\n").pop()).toMatch(/^crawl: cannot write (to .*archive|the page list): no space left on the device \(ENOSPC\)$/);
      const collection = join(disk, "collections", "full");
      const archive = join(collection, "archive");
      const warcs = readdirSync(archive).filter((f) => f.endsWith(".warc.gz"));
      expect(warcs.length).toBeGreaterThan(0);
      for (const warc of warcs) expect(readWarcRecords(join(archive, warc)).length).toBeGreaterThan(1);
      expect(readdirSync(collection).filter((f) => f.includes(".wacz"))).toEqual([]);
      expect(await redis.client.sismember("allcrawls", "full")).toBe(0);
    } finally {
      execFileSync("umount", [disk]);
    }
  }, 120_000);
});
