import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { freePort } from "./freePort.js";
import { bootId, isPidAlive, pidNamespace, processStartTime } from "../util/procfs.js";
import { debugAccessHost } from "../util/debugAccessHost.js";

/** The exit code of the launcher when another redis-server holds the data folder's lock. */
const LOCKED_EXIT = 75;
/** How long a start waits for a leftover server of the same folder to go away. */
const LOCK_WAIT_MS = 10_000;

/**
 * How the server is started, by /bin/sh: open the data folder's lock file on fd 9 and take an flock on
 * it, or give up (exit 75) if another server holds it; then become redis-server (exec: same pid), which
 * inherits fd 9 and so holds the lock for exactly as long as it lives. A restart can therefore never run
 * a second server on one data folder, even after its crawler was killed. setpriv (util-linux) asks the
 * kernel for a parent-death signal first, as for Chromium (src/browser/deathSignal.ts): SIGTERM, so that
 * a server whose crawler was killed, even with SIGKILL, writes its append-only file and exits.
 */
const LAUNCHER = [
  `exec 9>>"$1"; shift`,
  `if command -v flock >/dev/null 2>&1; then flock -n 9 || exit ${LOCKED_EXIT}; fi`,
  `if [ -x /usr/bin/setpriv ]; then exec /usr/bin/setpriv --pdeathsig TERM -- "$@"; fi`,
  `exec "$@"`,
].join("\n");

/** What the crawler that started a server writes beside it, for the next start in the same folder. */
interface ServerRecord {
  pid: number;
  port: number;
  ownerPid?: number;
  /** With the pids, names the processes even after a pid is reused. */
  ownerStartTime?: string | null;
  startTime?: string | null;
  /** Where these pids mean something: another container sharing the folder cannot judge them. */
  locality?: string | null;
}

/** This boot and pid namespace (see ownership/processIdentity.ts), or null where unknown. */
function locality(): string | null {
  const boot = bootId();
  const namespace = pidNamespace();
  return boot && namespace ? `${boot} ${namespace}` : null;
}

export interface EmbeddedRedisOptions {
  /** Data directory (append-only file lives here, so a crawl can be resumed). */
  dataDir: string;
  /** Persist with appendonly (crawl state) or keep nothing on disk (tests, scratch). */
  persist?: boolean;
  binary?: string;
  /** Listen on this port (e.g. to restart a server where its clients expect it); default: a free one. */
  port?: number;
  /**
   * --debugAccessRedis: listen where DEBUG_ACCESS_HOST says (default: every interface in a container,
   * loopback elsewhere; see util/debugAccessHost.ts), so a debugger can connect, as browsertrix-crawler
   * allows; always with a password then (`password`, or one made up here).
   */
  debugAccess?: boolean;
  /** Clients must AUTH with this (given to redis-server on its standard input, never on its command line). */
  password?: string;
}

/** A redis-server child process on a free loopback port; the crawler's default and the tests' Redis. */
export class EmbeddedRedis {
  private child: ChildProcess | null = null;
  private exitListeners: ((message: string) => void)[] = [];
  port = 0;
  /** Where it listens. */
  readonly host: string;
  /** The password clients give; null: none (loopback only, protected mode). */
  readonly password: string | null;

  constructor(private readonly options: EmbeddedRedisOptions) {
    this.host = options.debugAccess ? debugAccessHost() : "127.0.0.1";
    this.password = options.password ?? (options.debugAccess ? randomBytes(24).toString("hex") : null);
  }

  /** Where the crawler connects: the address listened on, or loopback when that is every interface. */
  private get connectHost(): string {
    return this.host === "0.0.0.0" || this.host === "::" ? "127.0.0.1" : this.host;
  }

  /** The URL the crawler connects with, the password in it. */
  get url(): string {
    const host = this.connectHost.includes(":") ? `[${this.connectHost}]` : this.connectHost;
    return `redis://${this.password ? `:${this.password}@` : ""}${host}:${this.port}/0`;
  }

  private get stateFile(): string {
    return join(this.options.dataDir, "embedded-redis.json");
  }

  private get lockFile(): string {
    return join(this.options.dataDir, "embedded-redis.lock");
  }

  async start(): Promise<string> {
    mkdirSync(this.options.dataDir, { recursive: true });
    const binary = this.options.binary ?? process.env.REDIS_SERVER_BIN ?? "redis-server";
    const persist = this.options.persist ?? true;
    const lockWaitEnds = Date.now() + LOCK_WAIT_MS;
    for (let attempt = 0; ; attempt++) {
      const leftover = await this.shutdownLeftover();
      this.port = this.options.port ?? (await freePort());
      const args = [
        "--port", String(this.port),
        "--bind", this.host,
        "--dir", this.options.dataDir,
        "--save", "",
        "--appendonly", persist ? "yes" : "no",
        "--appendfsync", "everysec",
        "--protected-mode", "yes",
        "--daemonize", "no",
        "--loglevel", "warning",
        "--logfile", "",
      ];
      // Own process group: a Ctrl-C meant for the crawler must not stop its Redis before the crawler has
      // saved its state. If the crawler dies, the parent-death signal stops the server (see LAUNCHER).
      // `-` first: redis-server reads more configuration from its standard input, where the password goes
      // (a command line is there for every local user to read).
      const stdinConfig = this.password ? ["-"] : [];
      const child = spawn("/bin/sh", ["-c", LAUNCHER, "redis-launcher", this.lockFile, binary, ...stdinConfig, ...args], { stdio: [this.password ? "pipe" : "ignore", "ignore", "pipe"], detached: true });
      if (this.password) child.stdin?.end(`requirepass ${this.password}\n`);
      child.stdin?.on("error", () => undefined);
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      const ready = await Promise.race([
        this.waitForPing().then(() => "ready" as const),
        spawnError.then((err) => err),
        exited,
      ]);
      if (ready === "ready") {
        this.child = child;
        child.stderr?.removeAllListeners("data");
        child.stderr?.destroy();
        child.once("exit", (code, signal) => {
          if (this.child !== child) return; // stopped on purpose
          this.child = null;
          const how = signal ? `killed by ${signal}` : `exit code ${code}`;
          for (const listener of this.exitListeners) listener(`the embedded redis-server (pid ${child.pid}) exited unexpectedly (${how})`);
        });
        const record: ServerRecord = {
          pid: child.pid!, port: this.port, ownerPid: process.pid, ownerStartTime: processStartTime(process.pid), startTime: processStartTime(child.pid!), locality: locality(),
        };
        writeFileSync(this.stateFile, JSON.stringify(record));
        return this.url;
      }
      if (ready instanceof Error) {
        throw new Error(`cannot start embedded redis-server (${binary}): ${ready.message}; install Debian's redis-server`);
      }
      if (ready === LOCKED_EXIT) {
        // Another server holds this folder: one starting right now, a leftover on its way out, or the
        // server of a crawler in another container sharing this folder.
        if (leftover?.locality && leftover.locality !== locality()) {
          throw new Error(
            `this collection's embedded Redis runs for a crawler in another container (pid ${leftover.ownerPid} there); ` +
              "to run several crawler processes on one crawl, give them all the same --redisStoreUrl",
          );
        }
        if (Date.now() > lockWaitEnds) {
          throw new Error(`another redis-server is running on ${this.options.dataDir}${leftover ? ` (pid ${leftover.pid})` : ""}: stop it first`);
        }
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      // Port taken between probe and bind: try another one.
      if (!/Address already in use/i.test(stderr) || attempt >= 4 || this.options.port) {
        throw new Error(`embedded redis-server exited: ${stderr.trim().split("\n").pop() || "no output"}`);
      }
    }
  }

  /** Called once if the server dies while in use (not when stop() or kill() ends it). */
  onUnexpectedExit(listener: (message: string) => void): void {
    this.exitListeners.push(listener);
  }

  private async waitForPing(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const client = new Redis(this.port, this.connectHost, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...(this.password ? { password: this.password } : {}) });
      client.on("error", () => {});
      try {
        await client.connect();
        await client.ping();
        client.disconnect();
        return;
      } catch {
        client.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error("embedded redis-server did not answer PING within 10s");
  }

  /**
   * A server left running by a crawler process that died still owns this data directory: ask it to
   * shut down (it flushes its append-only file) before a new one opens the same files. Returns what the
   * record said, if there was one. Refuses while the crawler that started the server still runs.
   */
  private async shutdownLeftover(): Promise<ServerRecord | null> {
    let leftover: ServerRecord;
    try {
      leftover = JSON.parse(readFileSync(this.stateFile, "utf8")) as ServerRecord;
    } catch {
      return null;
    }
    // Written in another container (or before a reboot): its pids mean nothing here. The lock tells
    // whether that server still runs (see start()).
    if (leftover.locality && leftover.locality !== locality()) return leftover;
    const serverAlive = sameProcess(leftover.pid, leftover.startTime);
    if (leftover.ownerPid && leftover.ownerPid !== process.pid && sameProcess(leftover.ownerPid, leftover.ownerStartTime) && serverAlive) {
      throw new Error(
        `this collection's embedded Redis belongs to a crawler that is still running (pid ${leftover.ownerPid}); ` +
          "to run several crawler processes on one crawl, give them all the same --redisStoreUrl",
      );
    }
    if (serverAlive) {
      const client = new Redis(leftover.port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on("error", () => {});
      let asked = false;
      try {
        await client.connect();
        asked = await client.call("SHUTDOWN", "SAVE").then(() => true, (err: unknown) => !/NOAUTH|WRONGPASS/i.test(String(err)));
      } catch {
        // not a Redis we can talk to: the lock still keeps a second server off this folder
        asked = true;
      } finally {
        client.disconnect();
      }
      // A server with a password (--debugAccessRedis) whose crawler died: its password went with it.
      // SIGTERM makes redis-server write its append-only file and exit, as SHUTDOWN SAVE does.
      if (!asked) {
        try {
          process.kill(leftover.pid, "SIGTERM");
        } catch {
          // gone meanwhile
        }
      }
      for (let i = 0; i < 100 && sameProcess(leftover.pid, leftover.startTime); i++) await new Promise((r) => setTimeout(r, 50));
    }
    rmSync(this.stateFile, { force: true });
    return leftover;
  }

  /** Stop the server, letting it flush its append-only file first. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    this.child = null;
    rmSync(this.stateFile, { force: true });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }

  /** Kill without flushing (tests that simulate a crash). */
  kill(): void {
    this.child?.kill("SIGKILL");
    this.child = null;
  }
}

/** Whether `pid` is still the process recorded (same start time, where it was recorded). */
function sameProcess(pid: number, startTime: string | null | undefined): boolean {
  if (!isPidAlive(pid)) return false;
  return !startTime || processStartTime(pid) === startTime;
}
