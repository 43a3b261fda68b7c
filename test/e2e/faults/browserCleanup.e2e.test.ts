import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server, type ServerResponse } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserProcesses, killBrowserProcesses } from "../../../src/browser/browserProcesses.js";
import type { BrowserRecord } from "../../../src/browser/runningBrowsers.js";
import { launchBrowser } from "../../../src/browser/launch.js";
import { AddressPolicy } from "../../../src/fetch/addressPolicy.js";
import { SocketGate } from "../../../src/fetch/socketGate.js";
import { bootId, isPidAlive, pidNamespace, processArgs, processStartTime } from "../../../src/util/procfs.js";
import { logLines } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

const CHROMIUM = process.env.BROWSER_BIN ?? "/usr/bin/chromium";

// "/" loads an image that never arrives, so a crawl of it is still running when the test kills it.
let server: Server;
let site: string;
const held: ServerResponse[] = [];
let slowRequested = false;
let redis: TestRedis;
let cwd: string;
/** Processes and profile folders this file made itself; killed by pid and removed at the end. */
const started: ChildProcess[] = [];
const profiles: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/slow.png") {
      slowRequested = true;
      held.push(res);
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end(req.url === "/" ? '<!doctype html><title>slow</title><img src="/slow.png">' : "<!doctype html><title>quick</title><p>quick</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  site = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-browser-cleanup-"));
});

afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of profiles) {
    await killBrowserProcesses(dir); // only processes using these test profiles
    rmSync(dir, { recursive: true, force: true });
  }
  for (const res of held) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await redis.stop();
  rmSync(cwd, { recursive: true, force: true });
});

let crawls = 0;
/** A crawler process writing to `collection`; each one a crawl of its own (the killed one's queue is not resumed). */
function crawl(collection: string, url: string, extra: string[] = []) {
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", "--url", url, "--cwd", cwd, "--collection", collection, "--crawlId", `${collection}-${++crawls}`,
    "--redisStoreUrl", redis.url, "--pageLoadTimeout", "120", ...extra,
  ], { stdio: ["ignore", "ignore", "pipe"] });
  started.push(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return condition();
}

const recordsDir = (collection: string) => join(cwd, "collections", collection, "browsers");
const readRecords = (collection: string): BrowserRecord[] =>
  readdirSync(recordsDir(collection)).filter((n) => n.endsWith(".json")).map((n) => JSON.parse(readFileSync(join(recordsDir(collection), n), "utf8")) as BrowserRecord);
const parentPid = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);

/** A Chromium not started by a crawler, as a killed crawler would leave it. */
async function startChromium(profileDir: string): Promise<ChildProcess> {
  const child = spawn(CHROMIUM, ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", `--user-data-dir=${profileDir}`, "about:blank"], {
    stdio: "ignore",
    detached: true,
  });
  started.push(child);
  // The browser plus its zygotes, given time to come up. On a loaded machine a browser has been seen alive with one
  // child, or none, after 30 s: whatever part of the family is up is what a dead crawler leaves for the crawl to
  // kill, and the browser's own process is always part of it.
  await until(() => browserProcesses(profileDir).length >= 3, 30_000);
  expect(browserProcesses(profileDir), `Chromium ${child.pid}: exit code ${child.exitCode}, signal ${child.signalCode}`).toContain(child.pid);
  return child;
}

describe("Chromium does not outlive its crawler", () => {
  it("a crawler killed with SIGKILL takes its browser and all the browser's processes with it", async () => {
    const run = crawl("killed", `${site}/`);
    expect(await until(() => slowRequested && existsSync(recordsDir("killed")) && readRecords("killed")[0]?.browserPid != null, 120_000)).toBe(true);
    const [record] = readRecords("killed");
    profiles.push(record.profileDir);
    expect(record).toMatchObject({ crawlerPid: run.child.pid, host: hostname(), browserPid: expect.any(Number) });
    expect(record.crawlerStartTime).toBe(processStartTime(run.child.pid!));
    const family = browserProcesses(record.profileDir);
    expect(family).toContain(record.browserPid);
    expect(family.length).toBeGreaterThanOrEqual(3); // browser, zygotes, renderer...
    expect(parentPid(record.browserPid!)).toBe(run.child.pid); // the wrapper exec'd: the crawler's own child

    run.child.kill("SIGKILL");
    await run.exited;
    expect(await until(() => browserProcesses(record.profileDir).length === 0, 15_000)).toBe(true);
    expect(browserProcesses(record.profileDir)).toEqual([]);
    // It could not tidy up: its record and profile are what the next crawl here cleans.
    expect(readRecords("killed").map((r) => r.profileDir)).toEqual([record.profileDir]);

    for (const res of held.splice(0)) res.destroy();
    const again = crawl("killed", `${site}/quick.html`, ["--limit", "1"]);
    expect(await again.exited, again.stderr()).toBe(0);
    const cleaned = logLines(again.stderr()).filter((l) => l.message === "cleaned up after the Chromium of a crawler that died");
    expect(cleaned.map((l) => l.details)).toEqual([expect.objectContaining({ crawlerPid: run.child.pid, profileDir: record.profileDir, killed: [] })]);
    expect(existsSync(record.profileDir)).toBe(false);
    expect(readRecords("killed")).toEqual([]); // and the second crawl removed its own on the way out
  }, 300_000);

  it("a crawl cleans up the browsers of dead crawlers recorded in its collection, and only those", async () => {
    const dir = recordsDir("leftovers");
    mkdirSync(dir, { recursive: true });
    const profile = (name: string) => {
      const dir = mkdtempSync(join(tmpdir(), `crawler-profile-test-${name}-`));
      profiles.push(dir);
      return dir;
    };
    const deadPid = await new Promise<number>((resolve) => {
      const child = spawn("true");
      child.on("close", () => resolve(child.pid!));
    });
    const sleeper = spawn("sleep", ["600"], { stdio: "ignore" });
    started.push(sleeper);
    await until(() => processStartTime(sleeper.pid!) !== null, 10_000);
    const record = (crawlerPid: number, crawlerStartTime: string | null, profileDir: string, browserPid: number, namespace = pidNamespace()): BrowserRecord => ({
      crawlerPid, crawlerStartTime, bootId: bootId(), pidNamespace: namespace, host: hostname(), profileDir, browserPid, startedAt: new Date().toISOString(),
    });
    const write = (name: string, r: BrowserRecord) => writeFileSync(join(dir, `${name}.json`), JSON.stringify(r));

    // A: the crawler is dead, its Chromium still runs.
    const leftoverProfile = profile("leftover");
    const leftover = await startChromium(leftoverProfile);
    // Each process of the family by pid and start time: a helper that exits on its own before the cleanup is
    // not there to be killed, and its pid may be reused by then.
    const leftoverFamily = browserProcesses(leftoverProfile).map((pid) => ({ pid, startTime: processStartTime(pid) }));
    write("dead-with-browser", record(deadPid, "1", leftoverProfile, leftover.pid!));
    // B: the crawler is dead and its browser pid now belongs to an unrelated process (the sleeper).
    const reusedProfile = profile("reused");
    write("dead-pid-reused", record(deadPid, "1", reusedProfile, sleeper.pid!));
    // C: the "crawler" (the sleeper) is alive: its browser is not to be touched.
    const liveProfile = profile("live");
    const live = await startChromium(liveProfile);
    const liveFamily = browserProcesses(liveProfile);
    write("live", record(sleeper.pid!, processStartTime(sleeper.pid!), liveProfile, live.pid!));
    // D: the sleeper's pid, but another start time: a pid reused after the crawler died.
    const staleProfile = profile("stale");
    write("pid-reused-by-crawler", record(sleeper.pid!, "1", staleProfile, 999_999_999));
    // E: a crawler of another pid namespace (a container on the host's network: same host name): its pid
    // means nothing here, so its record and profile are left to it.
    const otherNamespaceProfile = profile("other-namespace");
    write("other-namespace", record(deadPid, "1", otherNamespaceProfile, 999_999_998, "pid:[1]"));

    const run = crawl("leftovers", `${site}/quick.html`, ["--limit", "1"]);
    expect(await run.exited, run.stderr()).toBe(0);

    const cleaned = logLines(run.stderr()).filter((l) => l.message === "cleaned up after the Chromium of a crawler that died");
    expect(cleaned.map((l) => l.details.profileDir).sort()).toEqual([leftoverProfile, reusedProfile, staleProfile].sort());
    const killed = cleaned.find((l) => l.details.profileDir === leftoverProfile)!.details.killed as number[];
    expect(killed).toContain(leftover.pid);
    // Still running: the same process (pid and start time) and not a zombie (a killed helper whose parent died
    // is left to pid 1, which in a container may never reap it; a zombie has no command line).
    expect(leftoverFamily.filter(({ pid, startTime }) => startTime !== null && processStartTime(pid) === startTime && processArgs(pid) !== null)).toEqual([]);
    expect(killed.filter((pid) => liveFamily.includes(pid) || pid === sleeper.pid)).toEqual([]);
    expect(browserProcesses(leftoverProfile)).toEqual([]);
    for (const p of [leftoverProfile, reusedProfile, staleProfile]) expect(existsSync(p)).toBe(false);

    expect(isPidAlive(sleeper.pid!)).toBe(true);
    // The live browser runs on (none of its processes was killed, above); its helper processes come and go on
    // their own (a utility process may exit and another start), so its main process is what is checked here.
    expect(browserProcesses(liveProfile)).toContain(live.pid);
    expect(existsSync(liveProfile)).toBe(true);
    expect(existsSync(otherNamespaceProfile)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(["live.json", "other-namespace.json"]);

    live.kill("SIGKILL");
    sleeper.kill("SIGKILL");
    await until(() => browserProcesses(liveProfile).length === 0, 15_000);
  }, 300_000);

  it("a browser that does not close within the deadline is killed, with all its processes", async () => {
    const socketGate = await SocketGate.start(AddressPolicy.outsideACrawl());
    const launched = await launchBrowser({ executablePath: CHROMIUM, headless: true, socketGate });
    const pid = launched.browser.process()!.pid!;
    const profileArg = launched.browser.process()!.spawnargs.find((a) => a.startsWith("--user-data-dir="))!;
    const profileDir = profileArg.slice("--user-data-dir=".length);
    expect(browserProcesses(profileDir)).toContain(pid);
    process.kill(pid, "SIGSTOP"); // a browser that no longer answers
    // Without the deadline, close() waits for the protocol timeout (120 s): longer than this test may run.
    await launched.close();
    await socketGate.close();
    expect(browserProcesses(profileDir)).toEqual([]);
    expect(existsSync(profileDir)).toBe(false);
  }, 60_000);
});
