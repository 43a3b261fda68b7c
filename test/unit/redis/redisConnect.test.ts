import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { connectRedis, MAX_WAITING_COMMANDS, RedisBackloggedError } from "../../../src/redis/connect.js";
import { startTestRedis } from "../../helpers/redis.js";

describe("crawl-state Redis connection during an outage", () => {
  it("commands wait for the server to come back, but only so many: the rest fail at once (bounded memory)", async () => {
    const redis = await startTestRedis(true);
    const client = await connectRedis(redis.url, "test Redis", { maxWaitingCommands: 3 });
    try {
      await redis.stopServer();
      for (let i = 0; i < 200 && client.status === "ready"; i++) await new Promise((r) => setTimeout(r, 25));
      expect(client.status).not.toBe("ready");
      const sent = Array.from({ length: 5 }, (_, i) => client.set(`k${i}`, String(i)).then(
        (value) => ({ value }),
        (err: unknown) => ({ error: err }),
      ));
      // The two beyond the bound are refused without waiting for the server.
      const refused = await Promise.race([Promise.all(sent.slice(3)), new Promise<"still waiting">((r) => setTimeout(() => r("still waiting"), 3000))]);
      if (refused === "still waiting") throw new Error("the commands beyond the bound are still waiting for the server");
      for (const outcome of refused) {
        expect("error" in outcome && outcome.error).toBeInstanceOf(RedisBackloggedError);
        expect(String("error" in outcome && (outcome.error as Error).message)).toBe("test Redis has been unreachable too long: 3 commands are waiting for it");
      }
      await redis.restartServer();
      expect(await Promise.all(sent.slice(0, 3))).toEqual([{ value: "OK" }, { value: "OK" }, { value: "OK" }]);
      expect(await client.mget("k0", "k1", "k2", "k3", "k4")).toEqual(["0", "1", "2", null, null]);
      // The backlog drained: commands go through again.
      expect(await client.set("k5", "5")).toBe("OK");
      expect(MAX_WAITING_COMMANDS).toBe(10_000); // the crawler's bound (docs/user-guide/scaling.md)
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });
});

describe("Lua scripts go by their SHA1", () => {
  /** How many times the server ran a command, from INFO commandstats. */
  const calls = async (client: Redis, command: "eval" | "evalsha"): Promise<number> =>
    Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await client.info("commandstats"))?.[1] ?? 0);

  it("a script is sent whole once, then by SHA1 only; a server that forgot it (restart, SCRIPT FLUSH) gets it again; errors stay errors", async () => {
    const redis = await startTestRedis();
    const client = await connectRedis(redis.url, "test Redis");
    try {
      const script = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
      await redis.client.config("RESETSTAT");
      expect(await client.eval(script, 1, "n", 2)).toBe(2);
      expect(await client.eval(script, 1, "n", 3)).toBe(5);
      expect(await client.eval(script, 1, "n", 4)).toBe(9);
      // The first EVALSHA got NOSCRIPT (it ran nothing: n is 9, not 11), then EVAL; the others went by SHA1.
      expect([await calls(redis.client, "eval"), await calls(redis.client, "evalsha")]).toEqual([1, 3]);
      await redis.client.script("FLUSH");
      expect(await client.eval(script, 1, "n", 1)).toBe(10);
      expect([await calls(redis.client, "eval"), await calls(redis.client, "evalsha")]).toEqual([2, 4]);
      // A script's own error is not taken for NOSCRIPT: it reaches the caller, run once.
      await expect(client.eval("return redis.error_reply('NOPE no such thing')", 0)).rejects.toThrow("NOPE no such thing");
      expect(await calls(redis.client, "eval")).toBe(3);
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });
});
