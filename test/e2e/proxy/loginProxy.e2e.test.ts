import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTinyproxy, type RunningProxy } from "../../helpers/proxyServers.js";
import { PASSWORD, startLoginSite, USER, type LoginSite } from "../../helpers/loginSite.js";
import { descendsFrom, processes } from "../../helpers/processes.js";

// create-login-profile --proxyServer http://user:password@...: the login browser reaches the site through a
// real tinyproxy that wants Basic credentials, and no process's command line holds the proxy's password
// (Chromium goes through the crawler's loopback relay, which alone holds it).

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PROXY_USER = "bob";
const PROXY_PASSWORD = "Pr0xy-login-7d2f9a";

let dir: string;
let site: LoginSite;
let tinyproxy: RunningProxy;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "login-proxy-"));
  site = await startLoginSite();
  tinyproxy = await startTinyproxy(dir, PROXY_USER, PROXY_PASSWORD);
});

afterAll(async () => {
  tinyproxy?.stop();
  await site?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("create-login-profile --proxyServer with credentials", () => {
  it("logs in through the proxy; the password is on no process's command line, Chromium's included", async () => {
    const profile = join(dir, "profile.tar.gz");
    const args = ["--url", site.loginUrl, "--user", USER, "--password", PASSWORD, "--filename", profile, "--proxyServer", tinyproxy.url];
    const child = spawn(process.execPath, ["dist/src/cli/createLoginProfile.js", ...args], { cwd: ROOT, env: { ...process.env, PROXY_SERVER: "" } });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    let running = true;
    void exited.then(() => (running = false));

    const holding = new Set<string>();
    const chromiumProxySwitches = new Set<string>();
    let samples = 0;
    while (running) {
      const all = processes();
      // The command's own arguments hold the password until it has read them and rewritten its title, its
      // first few hundred milliseconds (as any program's): it is checked once its browser has started.
      const browserStarted = [...all.keys()].some((pid) => pid !== child.pid && child.pid && descendsFrom(pid, child.pid, all));
      for (const [pid, { line }] of all) {
        // Every process of the machine: none may show the password.
        if (line.includes(PROXY_PASSWORD) && (pid !== child.pid || browserStarted)) holding.add(`${pid}: ${line.slice(0, 300)}`);
        const proxySwitch = /--proxy-server=(\S+)/.exec(line)?.[1];
        if (proxySwitch && child.pid && descendsFrom(pid, child.pid, all)) chromiumProxySwitches.add(proxySwitch);
      }
      samples++;
      await new Promise((r) => setTimeout(r, 50));
    }
    const code = await exited;
    expect(output).toContain("profile saved");
    expect(code).toBe(0);
    expect(existsSync(profile)).toBe(true);
    // The command lines were read while Chromium ran: it was given the loopback relay, without credentials.
    expect(samples).toBeGreaterThan(5);
    expect([...chromiumProxySwitches].length).toBeGreaterThan(0);
    for (const proxySwitch of chromiumProxySwitches) expect(proxySwitch).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect([...chromiumProxySwitches]).not.toContain(`http://127.0.0.1:${tinyproxy.port}`);
    expect([...holding]).toEqual([]);
    // The login went through tinyproxy, with the credentials it asks for.
    expect(site.logins).toBe(1);
    expect(tinyproxy.log()).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/login/);
  }, 120_000);
});
