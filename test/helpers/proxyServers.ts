import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort } from "../../src/redis/freePort.js";

/**
 * Real proxies on 127.0.0.1 free ports for one test file, each started here and stopped by its pid:
 * tinyproxy (HTTP, Basic credentials), microsocks (SOCKS5, user and password), sshd (an SSH server with a
 * generated host key and an authorized key, for ssh -D). None of them may reach beyond loopback:
 * tinyproxy only proxies to 127.0.0.x hosts (and the names a test gives it, sent to loopback sites) and
 * sshd only opens `allowedTargets` (names are refused without being resolved); microsocks cannot filter,
 * so the tests give it only loopback IP literals, and it asks DNS of 127.0.0.1 only (startMicrosocks).
 */
export interface RunningProxy {
  url: string;
  port: number;
  /** The proxy's own log so far. */
  log(): string;
  stop(): void;
}

function started(child: ChildProcess, url: string, port: number, log: () => string): RunningProxy {
  return { url, port, log, stop: () => void (child.exitCode === null && child.kill("SIGTERM")) };
}

async function waitForPort(port: number, child: ChildProcess, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode})`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not listen on ${port}`);
}

/**
 * `namedSites` (name: "127.0.0.x:port"): names only this tinyproxy knows, each sent to its loopback site
 * (tinyproxy's Upstream rule, the site taking the request as an upstream proxy would), so that a test
 * has names the proxy resolves and the crawler cannot, without DNS or /etc/hosts.
 */
export async function startTinyproxy(dir: string, user: string, password: string, namedSites: Record<string, string> = {}): Promise<RunningProxy> {
  const port = await freePort();
  const filter = join(dir, "tinyproxy-filter");
  const escaped = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  writeFileSync(filter, ["^127\\.0\\.0\\.[0-9]+$", ...Object.keys(namedSites).map((name) => `^${escaped(name)}$`), ""].join("\n"));
  const config = join(dir, "tinyproxy.conf");
  writeFileSync(config, [
    `Port ${port}`, "Listen 127.0.0.1", "Timeout 60", "LogLevel Info", "MaxClients 100",
    `BasicAuth ${user} ${password}`, `Filter "${filter}"`, "FilterDefaultDeny Yes", "FilterType ere",
    ...Object.entries(namedSites).map(([name, address]) => `Upstream http ${address} "${name}"`), "",
  ].join("\n"));
  let output = "";
  const child = spawn("tinyproxy", ["-d", "-c", config], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d: Buffer) => (output += d.toString("latin1")));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString("latin1")));
  await waitForPort(port, child, "tinyproxy");
  return started(child, `http://${user}:${password}@127.0.0.1:${port}`, port, () => output);
}

/**
 * microsocks resolves every name it is sent, and the crawler sends names through a proxy unresolved (a
 * page's, or Chromium's own background requests): so it runs in a mount namespace of its own
 * (`unshare --mount`, as root, as the suite runs) whose /etc/resolv.conf names only 127.0.0.1, where its
 * DNS queries go unanswered without leaving loopback, and whose /etc/hosts holds localhost and
 * `namedSites` (name: loopback address): names only this microsocks resolves, the machine's files untouched.
 */
export async function startMicrosocks(dir: string, user: string, password: string, namedSites: Record<string, string> = {}): Promise<RunningProxy> {
  const port = await freePort();
  let output = "";
  const resolvConf = join(dir, "microsocks-resolv.conf");
  writeFileSync(resolvConf, "nameserver 127.0.0.1\n");
  const hosts = join(dir, "microsocks-hosts");
  writeFileSync(hosts, ["127.0.0.1 localhost", "::1 localhost", ...Object.entries(namedSites).map(([name, address]) => `${address} ${name}`), ""].join("\n"));
  const command = `mount --bind "$0" /etc/resolv.conf && mount --bind "$1" /etc/hosts && exec microsocks -i 127.0.0.1 -p ${port} -u "$2" -P "$3"`;
  const child = spawn("unshare", ["--mount", "--propagation", "private", "sh", "-c", command, resolvConf, hosts, user, password], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  await waitForPort(port, child, "microsocks");
  return started(child, `socks5://${user}:${password}@127.0.0.1:${port}`, port, () => output);
}

export interface RunningSshd extends RunningProxy {
  privateKeyFile: string;
  knownHostsFile: string;
}

export async function startSshd(dir: string, allowedTargets: string[]): Promise<RunningSshd> {
  const port = await freePort();
  const ssh = join(dir, "ssh");
  mkdirSync(ssh, { recursive: true });
  const hostKey = join(ssh, "host_key");
  const userKey = join(ssh, "user_key");
  for (const key of [hostKey, userKey]) execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
  writeFileSync(join(ssh, "authorized_keys"), readFileSync(`${userKey}.pub`));
  const knownHostsFile = join(ssh, "known_hosts");
  writeFileSync(knownHostsFile, `[127.0.0.1]:${port} ${readFileSync(`${hostKey}.pub`, "utf8")}`);
  const config = join(ssh, "sshd_config");
  const logFile = join(ssh, "sshd.log");
  writeFileSync(config, [
    `Port ${port}`, "ListenAddress 127.0.0.1", `HostKey ${hostKey}`, `PidFile ${join(ssh, "sshd.pid")}`,
    `AuthorizedKeysFile ${join(ssh, "authorized_keys")}`, "StrictModes no", "PasswordAuthentication no",
    "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "AllowTcpForwarding yes", "UsePAM no",
    `PermitOpen ${allowedTargets.join(" ")}`, "LogLevel DEBUG1", "",
  ].join("\n"));
  // sshd's privilege separation folder (an empty folder; the machine's own sshd is never touched).
  mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
  const child = spawn("/usr/sbin/sshd", ["-D", "-e", "-f", config, "-E", logFile], { stdio: "ignore" });
  await waitForPort(port, child, "sshd");
  const log = () => {
    try {
      return readFileSync(logFile, "latin1");
    } catch {
      return "";
    }
  };
  return { ...started(child, `ssh://root@127.0.0.1:${port}`, port, log), privateKeyFile: userKey, knownHostsFile };
}
