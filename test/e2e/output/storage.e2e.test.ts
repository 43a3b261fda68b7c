import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../../../bench/lib/generatedSite.js";
import { runCli, NO_BEHAVIORS } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
let site: GeneratedSite;
let redis: TestRedis;
const dir = mkdtempSync(join(tmpdir(), "crawl-storage-"));
/** The disk fills up at this many bytes. */
const TINY_DISK_BYTES = 60_000;

/**
 * A disk that fills up at 60 KB: a tmpfs of that size where the runner may mount one (root), else a
 * file-size limit (RLIMIT_FSIZE, set with prlimit on the crawler once Chromium runs, so only the
 * crawler's own files are held to it): writes past it fail with EFBIG instead of ENOSPC. Never skipped.
 * STORAGE_TEST_DISK=rlimit forces the second way (to check it on a runner that could mount).
 */
function tinyDisk(path: string): "tmpfs" | "rlimit" {
  mkdirSync(path, { recursive: true });
  if (process.env.STORAGE_TEST_DISK === "rlimit") return "rlimit";
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${TINY_DISK_BYTES}`, "tmpfs", path], { stdio: "ignore" });
    return "tmpfs";
  } catch {
    return "rlimit";
  }
}

/** Run the crawler; with "rlimit", its file-size limit is set as soon as its browser has started. */
function crawlOnTinyDisk(kind: "tmpfs" | "rlimit", args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { cwd: ROOT });
    let stderr = "";
    let limited = kind === "tmpfs";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (!limited && stderr.includes("Chromium started")) {
        limited = true;
        execFileSync("prlimit", ["--pid", String(child.pid), `--fsize=${TINY_DISK_BYTES}`]);
      }
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 110_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
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

  it("a full disk stops the crawl with a clear error; the WARC files stay whole, no broken WACZ", async () => {
    const disk = join(dir, "tiny");
    const kind = tinyDisk(disk);
    try {
      const result = await crawlOnTinyDisk(kind, [
        "--url", `${site.url}/page/0.html`, "--cwd", disk, ...NO_BEHAVIORS, "--collection", "full", "--generateWACZ", "--netIdleWait", "1", "--diskUtilization", "0",
        "--redisStoreUrl", redis.url,
      ]);
      // Past a file-size limit a write fails (EFBIG: exit 1, a file too large is not a full disk) or comes up
      // short, which the WARC writer reports as ENOSPC (exit 3, out of space).
      const enospc = "no space left on the device \\(ENOSPC\\)";
      const efbig = "file larger than the system allows \\(EFBIG\\)";
      const last = result.stderr.trim().split("\n").pop() ?? "";
      const tooLarge = kind === "rlimit" && new RegExp(efbig).test(last);
      expect(result.code, result.stderr.slice(-2000)).toBe(tooLarge ? 1 : 3);
      expect(last).toMatch(new RegExp(`^crawl: cannot write (to .*archive|the page list): ${tooLarge ? efbig : enospc}$`));
      const collection = join(disk, "collections", "full");
      const archive = join(collection, "archive");
      const warcs = readdirSync(archive).filter((f) => f.endsWith(".warc.gz"));
      expect(warcs.length).toBeGreaterThan(0);
      for (const warc of warcs) expect(readWarcRecords(join(archive, warc)).length).toBeGreaterThan(1);
      expect(readdirSync(collection).filter((f) => f.includes(".wacz"))).toEqual([]);
      expect(await redis.client.sismember("allcrawls", "full")).toBe(0);
    } finally {
      if (kind === "tmpfs") execFileSync("umount", [disk]);
    }
  }, 120_000);
});
