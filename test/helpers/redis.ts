import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
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
