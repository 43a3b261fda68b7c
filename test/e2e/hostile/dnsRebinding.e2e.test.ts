// The address policy at connect time (issue 28, item 5): a real DNS server that rebinds. The crawl runs in a
// private network and mount namespace (unshare --net --mount, as root: only `lo`, so no packet can leave
// loopback), with /etc/resolv.conf bind-mounted to name the DNS server of fixtures/rebindingWorld.ts on
// 127.0.0.1:53. Each name answers first a permitted address (127.0.0.1, the seed's), then, TTL 0, one the
// crawler is told to refuse (127.0.0.2, as link-local); one name fails first and then answers the refused
// address; one never resolves. The server on the refused address must never see a connection: not for the
// page, its subresources, a fetch(), a WebSocket or a service worker (its script and first request, which no
// tab pauses). Before the relay, Chromium resolved each name again itself, got the refused address and loaded
// from it.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorldReport } from "../../../fixtures/rebindingWorld.js";
import { logLines } from "../../helpers/cli.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const canUnshare = process.getuid?.() === 0 && existsSync("/usr/bin/unshare") && existsSync("/usr/sbin/ip");

/** Run the world (servers, DNS, one crawl) in a fresh network and mount namespace; its report. */
function runWorld(dir: string, crawlFlags: string[]): Promise<WorldReport> {
  const resolvConf = join(dir, "resolv.conf");
  writeFileSync(resolvConf, "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n");
  const input = join(dir, "input.json");
  const report = join(dir, "report.json");
  // CRAWLER_TEST_NO_DNS is lifted for this crawl only: its DNS is ours, and its network has nothing but lo.
  const env = { CRAWLER_TEST_NO_DNS: "", CRAWLER_TEST_HOSTS: "", CRAWLER_TEST_LINK_LOCAL: "127.0.0.2/32" };
  writeFileSync(input, JSON.stringify({
    crawl: [join(ROOT, "dist/src/cli/crawl.js"), "--url", "http://rebind.test:{port}/", "--cwd", dir, "--collection", "rebinding", "--behaviors", "", "--netIdleWait", "2", "--postLoadDelay", "1",
      "--serviceWorker", "enabled", "--extraChromeArgs=--unsafely-treat-insecure-origin-as-secure=http://rebind.test:{port}", ...crawlFlags],
    env,
    timeoutMs: 150_000,
  }));
  const script = 'ip link set lo up && mount --bind "$1" /etc/resolv.conf && exec "$2" "$3" "$4" "$5"';
  return new Promise((resolve, reject) => {
    const child = spawn("unshare", ["--net", "--mount", "--", "/bin/sh", "-c", script, "sh", resolvConf, process.execPath, join(ROOT, "dist/fixtures/rebindingWorld.js"), input, report], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0 || !existsSync(report)) return reject(new Error(`the rebinding world failed (exit ${code}): ${stderr.slice(-2000)}`));
      resolve(JSON.parse(readFileSync(report, "utf8")) as WorldReport);
    });
  });
}

describe.skipIf(!canUnshare)("DNS rebinding (needs root: unshare --net --mount)", () => {
  let dir: string;
  let world: WorldReport;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "crawl-rebinding-"));
    world = await runWorld(dir, []);
    console.log(JSON.stringify({ dns: world.dns, permitted: world.permitted, refused: world.refused }));
  }, 180_000);
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("crawls the page from the permitted address", () => {
    expect(world.code, world.stderr.slice(-3000)).toBe(0);
    const { port } = world;
    expect(world.permitted.requests).toEqual(expect.arrayContaining([
      `GET rebind.test:${port} /`, `GET assets.rebind.test:${port} /img.png`, `GET assets.rebind.test:${port} /data.json`, `UPGRADE ws.rebind.test:${port} /socket`,
      `GET rebind.test:${port} /sw.js`, `GET assets.rebind.test:${port} /from-sw.json`,
    ]));
    // The DNS server was asked, and answered the refused address to later queries (the rebinding happened).
    expect(world.dns).toContain("A rebind.test -> 127.0.0.1");
  });

  it("never connects to the address a name rebinds to: not for the page, a subresource, a fetch(), a WebSocket or a service worker", () => {
    expect(world.refused).toEqual({ connections: 0, requests: [] });
  });

  it("refuses a name that does not resolve (or did not when the crawler asked), with a clear log line", () => {
    const logs = logLines(world.stderr);
    const unresolved = logs.filter((l) => l.context === "capture" && l.message.startsWith("request not sent: its host name does not resolve"));
    expect(unresolved.map((l) => l.details.reason).sort()).toEqual(["flaky.rebind.test does not resolve", "none.rebind.test does not resolve"]);
    expect(world.permitted.requests.filter((r) => r.includes("flaky") || r.includes("none"))).toEqual([]);
  });
});
