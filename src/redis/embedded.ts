import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./freePort.js";
import { isPidAlive } from "../util/process.js";

export interface EmbeddedRedisOptions {
  /** Data directory (append-only file lives here, so a crawl can be resumed). */
  dataDir: string;
  /** Persist with appendonly (crawl state) or keep nothing on disk (tests, scratch). */
  persist?: boolean;
  binary?: string;
  /** Listen on this port (e.g. to restart a server where its clients expect it); default: a free one. */
  port?: number;
}

/** A redis-server child process on a free loopback port; the crawler's default and the tests' Redis. */
export class EmbeddedRedis {
  private child: ChildProcess | null = null;
  port = 0;

  constructor(private readonly options: EmbeddedRedisOptions) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  private get stateFile(): string {
    return join(this.options.dataDir, "embedded-redis.json");
  }

  async start(): Promise<string> {
    mkdirSync(this.options.dataDir, { recursive: true });
    await this.shutdownLeftover();
    const binary = this.options.binary ?? process.env.REDIS_SERVER_BIN ?? "redis-server";
    const persist = this.options.persist ?? true;
    for (let attempt = 0; attempt < 5; attempt++) {
      this.port = this.options.port ?? (await freePort());
      const args = [
        "--port", String(this.port),
        "--bind", "127.0.0.1",
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
      // saved its state. If the crawler dies, the next run finds and stops this server (shutdownLeftover).
      const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      const ready = await Promise.race([
        this.waitForPing().then(() => "ready" as const),
        spawnError.then((err) => err),
        exited.then(() => "exited" as const),
      ]);
      if (ready === "ready") {
        this.child = child;
        child.stderr?.removeAllListeners("data");
        child.stderr?.destroy();
        writeFileSync(this.stateFile, JSON.stringify({ pid: child.pid, port: this.port, ownerPid: process.pid }));
        return this.url;
      }
      if (ready instanceof Error) {
        throw new Error(`cannot start embedded redis-server (${binary}): ${ready.message}; install Debian's redis-server`);
      }
      // Port taken between probe and bind: try another one.
      if (!/Address already in use/i.test(stderr) || attempt === 4 || this.options.port) {
        throw new Error(`embedded redis-server exited: ${stderr.trim().split("\n").pop() ?? "no output"}`);
      }
    }
    throw new Error("embedded redis-server could not start");
  }

  private async waitForPing(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const client = new Redis(this.port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
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
   * A server left running by a crawler process that was killed still owns this data directory: ask it
   * to shut down (it flushes its append-only file) before a new one opens the same files.
   */
  private async shutdownLeftover(): Promise<void> {
    let leftover: { pid: number; port: number; ownerPid?: number };
    try {
      leftover = JSON.parse(readFileSync(this.stateFile, "utf8")) as { pid: number; port: number; ownerPid?: number };
    } catch {
      return;
    }
    if (leftover.ownerPid && leftover.ownerPid !== process.pid && isPidAlive(leftover.ownerPid) && isPidAlive(leftover.pid)) {
      throw new Error(
        `this collection's embedded Redis belongs to a crawler that is still running (pid ${leftover.ownerPid}); ` +
          "to run several crawler processes on one crawl, give them all the same --redisStoreUrl",
      );
    }
    if (isPidAlive(leftover.pid)) {
      const client = new Redis(leftover.port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on("error", () => {});
      try {
        await client.connect();
        await client.call("SHUTDOWN", "SAVE").catch(() => undefined);
      } catch {
        // not a Redis we can talk to: leave the process alone
      } finally {
        client.disconnect();
      }
      for (let i = 0; i < 100 && isPidAlive(leftover.pid); i++) await new Promise((r) => setTimeout(r, 50));
    }
    rmSync(this.stateFile, { force: true });
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

