import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { EmbeddedRedis } from "../../src/redis/embedded.js";

export interface TestRedis {
  url: string;
  server: EmbeddedRedis;
  client: Redis;
  stop(): Promise<void>;
  /** Stop the server only (clients see it go away); `restartServer` brings it back on the same port. */
  stopServer(): Promise<void>;
  restartServer(): Promise<void>;
}

/** A private redis-server on a free loopback port for one test file; never the machine's shared Redis. */
export async function startTestRedis(persist = false): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), "test-redis-"));
  let server = new EmbeddedRedis({ dataDir: dir, persist });
  const url = await server.start();
  const client = new Redis(url);
  client.on("error", () => {}); // tests stop servers on purpose
  return {
    url,
    get server() {
      return server;
    },
    client,
    async stop() {
      client.disconnect();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
    async stopServer() {
      await server.stop();
    },
    async restartServer() {
      // Same port and data folder: with `persist`, the data written before the stop is back.
      server = new EmbeddedRedis({ dataDir: dir, persist, port: server.port });
      await server.start();
    },
  };
}

/**
 * The private redis-server of a test file (or describe block), emptied before each test: call once at the
 * top of the scope. The returned object reads through to the server the hooks start.
 */
export function usePrivateRedis(): TestRedis {
  let started: TestRedis | undefined;
  beforeAll(async () => {
    started = await startTestRedis();
  });
  afterAll(async () => {
    await started?.stop();
  });
  beforeEach(async () => {
    await live().client.flushdb(); // our own private redis-server, never a shared one
  });
  const live = (): TestRedis => {
    if (!started) throw new Error("the test's redis-server is not started yet (use it inside a test or hook)");
    return started;
  };
  return {
    get url() { return live().url; },
    get server() { return live().server; },
    get client() { return live().client; },
    stop: () => live().stop(),
    stopServer: () => live().stopServer(),
    restartServer: () => live().restartServer(),
  };
}
