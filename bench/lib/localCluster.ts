// A real Redis Cluster of N master nodes on free loopback ports, each in its own folder (nodes.conf and
// append-only file there), created with `redis-cli --cluster create`: for the cluster tests and benchmarks.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

/**
 * Settings the nodes run with, and docs/user-guide/scaling.md recommends: a shard of the index stays a listpack
 * (compact, ~1 byte of overhead per field) up to this many entries and this long a value (a URL).
 */
export const LISTPACK_SETTINGS = ["--hash-max-listpack-entries", "512", "--hash-max-listpack-value", "512"];

export interface LocalCluster {
  ports: number[];
  /** A URL of the first node: the crawler and indexer find the rest. */
  url: string;
  /** Stop node i (SIGTERM: it writes its append-only file) and start it again on the same port and folder. */
  restartNode(i: number, downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** A loopback port p that is free together with p + 10000 (the node's cluster bus port). */
async function freeNodePort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 25000);
    if (taken.has(port) || !(await canListen(port)) || !(await canListen(port + 10000))) continue;
    taken.add(port);
    return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

export async function startLocalCluster(nodes = 3, extraArgs: string[] = []): Promise<LocalCluster> {
  const root = mkdtempSync(join(tmpdir(), "redis-cluster-"));
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < nodes; i++) ports.push(await freeNodePort(taken));
  const children: (ChildProcess | null)[] = [];

  const startNode = async (i: number) => {
    const dir = join(root, `node${i}`);
    mkdirSync(dir, { recursive: true });
    const child = spawn("redis-server", [
      "--port", String(ports[i]), "--bind", "127.0.0.1", "--dir", dir,
      "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
      "--appendonly", "yes", "--appendfsync", "always", "--save", "", ...LISTPACK_SETTINGS, ...extraArgs,
    ], { stdio: "ignore" });
    children[i] = child;
    await waitFor(async () => {
      const probe = new Redis(ports[i]!, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {});
      try {
        await probe.connect();
        return (await probe.ping()) === "PONG";
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    }, `node ${ports[i]} did not start`);
  };
  const stopNode = async (i: number) => {
    const child = children[i];
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
    children[i] = null;
  };
  const clusterReady = () => waitFor(async () => {
    for (const port of ports) {
      const probe = new Redis(port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {});
      try {
        await probe.connect();
        const info = (await probe.call("CLUSTER", "INFO")) as string;
        if (!info.includes("cluster_state:ok") || !info.includes("cluster_slots_ok:16384")) return false;
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    }
    return true;
  }, "the cluster did not become ready");

  try {
    for (let i = 0; i < nodes; i++) await startNode(i);
    const created = spawnSync("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"], { encoding: "utf8" });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout.slice(-500)} ${created.stderr}`);
    await clusterReady();
  } catch (err) {
    for (let i = 0; i < nodes; i++) await stopNode(i);
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  return {
    ports,
    url: `redis://127.0.0.1:${ports[0]}`,
    async restartNode(i, downMs = 500) {
      await stopNode(i);
      await new Promise((r) => setTimeout(r, downMs));
      await startNode(i);
      await clusterReady();
    },
    async stop() {
      for (let i = 0; i < nodes; i++) await stopNode(i);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function waitFor(check: () => Promise<boolean>, message: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(message);
}
