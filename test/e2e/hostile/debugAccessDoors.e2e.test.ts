import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { debugAccessHost } from "../../../src/util/debugAccessHost.js";

// --debugAccessBrowser and --debugAccessRedis: on loopback outside a container, on every interface in one
// (or where DEBUG_ACCESS_HOST says), and the opened redis-server always wants the password printed once on
// stderr. The test machine may itself be a container: CRAWLER_TEST_CONTAINER_MARKERS names the files that
// tell. Listening addresses are read with `ss -ltn`. No test server listens beyond loopback (vitest.config.ts):
// the container default, every interface, is checked where it is decided (debugAccessHost), and a crawl in a
// "container" is given DEBUG_ACCESS_HOST=127.0.0.2, which it must honour.

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const BROWSER_PORT = 9222;

let cwd: string;
let site: Server;
let origin: string;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "debug-doors-"));
  site = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>t</title><p>a page"));
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => site.close(resolve));
  rmSync(cwd, { recursive: true, force: true });
});

/** The local addresses listening on TCP `port`. */
function listeningOn(port: number): string[] {
  const lines = execFileSync("ss", ["-ltnH"], { encoding: "utf8" }).split("\n");
  return lines.map((line) => line.trim().split(/\s+/)[3] ?? "").filter((local) => local.endsWith(`:${port}`)).map((local) => local.slice(0, local.lastIndexOf(":"))).sort();
}

function redisCli(args: string[]): string {
  try {
    return execFileSync("redis-cli", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? err);
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).map((f) => join(dir, f)).filter((f) => statSync(f).isFile());
}

interface Doors {
  browser: string[];
  redis: string[];
  /** What redis-cli gets without a password, and with the URL printed. */
  withoutPassword: string;
  withPassword: string;
  password: string;
  redisServerCommandLine: string;
  stderr: string;
  code: number | null;
}

/** Crawl a page that stays open a while, and look at the doors while it runs. */
async function crawlWithDoors(collection: string, env: NodeJS.ProcessEnv, host = "127.0.0.1"): Promise<Doors> {
  const args = ["--url", `${origin}/`, "--cwd", cwd, "--collection", collection, "--scopeType", "page", "--behaviors", "", "--netIdleWait", "1", "--postLoadDelay", "6", "--debugAccessBrowser", "--debugAccessRedis"];
  const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { cwd: ROOT, env: { ...process.env, ...env } });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  try {
    const deadline = Date.now() + 60_000;
    while (!(stderr.includes("--debugAccessBrowser: the browser's DevTools") && stderr.includes("connect with redis-cli")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const url = /connect with redis-cli -u (redis:\/\/[^\s"]+)/.exec(stderr)?.[1] ?? "";
    const parsed = new RegExp(`^redis://default:([^@]+)@${host.replace(/\./g, "\\.")}:(\\d+)/0$`).exec(url);
    expect(parsed, stderr).not.toBeNull();
    const [, password, port] = parsed!;
    const redisServer = execFileSync("ss", ["-ltnpH", `sport = :${port}`], { encoding: "utf8" });
    const pid = Number(/pid=(\d+)/.exec(redisServer)?.[1]);
    const doors: Doors = {
      browser: listeningOn(BROWSER_PORT),
      redis: listeningOn(Number(port)),
      withoutPassword: redisCli(["-h", host, "-p", port, "DBSIZE"]),
      withPassword: redisCli(["-u", url, "--no-auth-warning", "PING"]),
      password,
      redisServerCommandLine: pid ? readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ") : "",
      stderr: "",
      code: null,
    };
    doors.code = await exited;
    doors.stderr = stderr;
    return doors;
  } finally {
    child.kill("SIGKILL");
  }
}

describe("debug doors", () => {
  it("where they listen: DEBUG_ACCESS_HOST, else every interface in a container, else loopback", () => {
    const marker = join(cwd, "dockerenv");
    writeFileSync(marker, "");
    expect(debugAccessHost({ CRAWLER_TEST_CONTAINER_MARKERS: join(cwd, "none") })).toBe("127.0.0.1");
    expect(debugAccessHost({ CRAWLER_TEST_CONTAINER_MARKERS: marker })).toBe("0.0.0.0");
    expect(debugAccessHost({ CRAWLER_TEST_CONTAINER_MARKERS: join(cwd, "none"), DEBUG_ACCESS_HOST: "0.0.0.0" })).toBe("0.0.0.0");
    expect(debugAccessHost({ CRAWLER_TEST_CONTAINER_MARKERS: marker, DEBUG_ACCESS_HOST: "127.0.0.1" })).toBe("127.0.0.1");
  });

  it("outside a container: both on loopback only; the redis-server refuses a client without the printed password, which no file and no command line holds", async () => {
    const doors = await crawlWithDoors("outside", { DEBUG_ACCESS_HOST: "", CRAWLER_TEST_CONTAINER_MARKERS: join(cwd, "no-such-marker") });
    expect(doors.browser).toEqual(["127.0.0.1"]);
    expect(doors.redis).toEqual(["127.0.0.1"]);
    expect(doors.withoutPassword).toMatch(/NOAUTH/);
    expect(doors.withPassword).toBe("PONG");
    expect(doors.password).toMatch(/^[0-9a-f]{48}$/);
    expect(doors.redisServerCommandLine).toMatch(/redis-server/);
    expect(doors.redisServerCommandLine).not.toContain(doors.password);
    expect(doors.code).toBe(0);
    // Printed once, on stderr; in no file of the collection (its log included).
    expect(doors.stderr.split(doors.password).length - 1).toBe(1);
    const files = filesUnder(join(cwd, "collections", "outside"));
    expect(files.some((f) => f.includes("/logs/"))).toBe(true);
    expect(files.filter((f) => readFileSync(f).includes(doors.password))).toEqual([]);
  }, 120_000);

  it("in a container, DEBUG_ACCESS_HOST chooses the address (the crawler's own clients follow); still with a password", async () => {
    const marker = join(cwd, "dockerenv");
    writeFileSync(marker, "");
    const doors = await crawlWithDoors("inside", { DEBUG_ACCESS_HOST: "127.0.0.2", CRAWLER_TEST_CONTAINER_MARKERS: marker }, "127.0.0.2");
    expect(doors.browser).toEqual(["127.0.0.2"]);
    expect(doors.redis).toEqual(["127.0.0.2"]);
    expect(doors.withoutPassword).toMatch(/NOAUTH/);
    expect(doors.withPassword).toBe("PONG");
    expect(doors.code).toBe(0);
  }, 120_000);
});
