import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../src/redis/freePort.js";

// A crawl's live view off loopback (SCREENCAST_HOST): its token is printed once on stderr, the log file shows
// it as ***, and the page answers 403 without it. 127.0.0.2 stands for the outside address
// (CRAWLER_TEST_LIVE_VIEW_OFF_LOOPBACK): tests never leave loopback.

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
let cwd: string;
let site: Server;
let origin: string;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "live-token-"));
  site = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>t</title><p>watched"));
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => site.close(resolve));
  rmSync(cwd, { recursive: true, force: true });
});

function status(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on("error", reject).end();
  });
}

describe("--screencastPort off loopback", () => {
  it("prints the page's address with its token once, on stderr only; without the token, 403", async () => {
    const args = ["--url", `${origin}/`, "--cwd", cwd, "--collection", "watched", "--scopeType", "page", "--behaviors", "", "--netIdleWait", "1", "--postLoadDelay", "4", "--screencastPort", String(await freePort())];
    const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], {
      cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, SCREENCAST_HOST: "127.0.0.2", CRAWLER_TEST_LIVE_VIEW_OFF_LOOPBACK: "1" },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    try {
      const deadline = Date.now() + 60_000;
      let url = "";
      while (!url && Date.now() < deadline) {
        url = /watch the crawl at (http:\/\/127\.0\.0\.2:\d+\/\?token=[\w-]+)/.exec(stderr)?.[1] ?? "";
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(url, stderr).not.toBe("");
      const token = new URL(url).searchParams.get("token")!;
      expect(await status(url)).toBe(200);
      expect(await status(url.replace(/\?token=.*/, ""))).toBe(403);
      expect(await exited).toBe(0);
      expect(stderr.split(token).length - 1).toBe(1);
      const logs = join(cwd, "collections", "watched", "logs");
      const logText = readdirSync(logs).map((f) => readFileSync(join(logs, f), "utf8")).join("");
      expect(logText).toContain("crawl started");
      expect(logText).not.toContain(token);
      // The log line for everyone (a log collector, the Redis error list) shows it scrubbed.
      expect(stderr).toMatch(/"watch the crawl at http:\/\/127\.0\.0\.2:\d+\/\?token=\*\*\*"/);
    } finally {
      child.kill("SIGKILL");
    }
  }, 90_000);
});
