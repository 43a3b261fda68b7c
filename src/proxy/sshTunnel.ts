import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { logger } from "../log/logger.js";
import { freePort } from "../redis/freePort.js";
import { proxyLabel, type ProxyDef } from "./proxySettings.js";

/**
 * An ssh:// proxy: the system `ssh -D` opens a SOCKS5 proxy on a free loopback port that forwards through
 * the SSH server (browsertrix-crawler runs autossh on port 9722; here a free port, so that several crawlers
 * can share a machine). If ssh dies during the crawl it is started again on the same port, as autossh would.
 */
export class SshTunnelError extends Error {}

const WAIT_MS = 30_000;
const SETPRIV = "/usr/bin/setpriv";

export interface SshTunnel {
  /** socks5://127.0.0.1:<port> */
  socksUrl: string;
  close(): void;
}

export async function openSshTunnel(proxy: ProxyDef): Promise<SshTunnel> {
  const port = await freePort();
  let closed = false;
  let child = await startSsh(proxy, port);
  let restarts = 0;
  const restart = (code: number | null, signal: NodeJS.Signals | null) => {
    if (closed) return;
    const delay = Math.min(30_000, 1000 * 2 ** Math.min(restarts, 5));
    restarts += 1;
    logger.warn("proxy", "the ssh tunnel of the proxy ended: starting it again", { proxy: proxyLabel(proxy), code, signal, inSeconds: delay / 1000 });
    setTimeout(() => {
      if (closed) return;
      startSsh(proxy, port).then(
        (next) => {
          if (closed) return void next.kill("SIGTERM");
          child = next;
          restarts = 0;
          next.once("exit", restart);
        },
        (err: Error) => {
          logger.warn("proxy", `the ssh tunnel could not be started again: ${err.message}`, { proxy: proxyLabel(proxy) });
          restart(null, null);
        },
      );
    }, delay).unref();
  };
  child.once("exit", restart);
  logger.info("proxy", "ssh tunnel open", { proxy: proxyLabel(proxy), socks: `socks5://127.0.0.1:${port}` });
  return {
    socksUrl: `socks5://127.0.0.1:${port}`,
    close() {
      closed = true;
      child.kill("SIGTERM");
    },
  };
}

/** ssh's arguments: key login only, no command, the SOCKS port on loopback, exit if it cannot be opened. */
export function sshArgs(proxy: ProxyDef, port: number): string[] {
  const options = [
    "BatchMode=yes", "IdentitiesOnly=yes", "ExitOnForwardFailure=yes", "ServerAliveInterval=10", "ServerAliveCountMax=3", "ConnectTimeout=10",
    // Without a known_hosts file the host key is not checked (as in browsertrix-crawler), and none is written.
    ...(proxy.knownHostsFile ? [`UserKnownHostsFile=${proxy.knownHostsFile}`, "StrictHostKeyChecking=yes"] : ["UserKnownHostsFile=/dev/null", "StrictHostKeyChecking=no", "LogLevel=ERROR"]),
  ];
  return [
    "-N", "-T", "-D", `127.0.0.1:${port}`, "-p", String(proxy.port),
    ...options.flatMap((o) => ["-o", o]),
    ...(proxy.privateKeyFile ? ["-i", proxy.privateKeyFile] : []),
    "--", `${proxy.username}@${proxy.host}`,
  ];
}

/** Start ssh and wait until its SOCKS port accepts connections; SshTunnelError (with ssh's own words) if it exits or 30 s pass. */
async function startSsh(proxy: ProxyDef, port: number): Promise<ChildProcess> {
  const args = sshArgs(proxy, port);
  // ssh dies with the crawler, even killed (setpriv --pdeathsig, as for Chromium).
  const proc = existsSync(SETPRIV) ? spawn(SETPRIV, ["--pdeathsig", "KILL", "--", "ssh", ...args], { stdio: ["ignore", "ignore", "pipe"] }) : spawn("ssh", args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr!.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const exited = new Promise<string>((resolve) => {
    proc.once("error", (err) => resolve(err.message));
    proc.once("exit", (code, signal) => resolve(`ssh exited (${signal ?? `code ${code}`})`));
  });
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const outcome = await Promise.race([exited, portOpen(port).then((open) => (open ? "open" : null))]);
    if (outcome === "open") return proc;
    if (outcome !== null) throw new SshTunnelError(`${lastLine(stderr) || outcome}`);
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new SshTunnelError(`no SOCKS port after ${WAIT_MS / 1000}s${stderr ? `: ${lastLine(stderr)}` : ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function lastLine(text: string): string {
  return text.trim().split("\n").map((l) => l.trim()).filter(Boolean).pop() ?? "";
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.setTimeout(1000);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}
