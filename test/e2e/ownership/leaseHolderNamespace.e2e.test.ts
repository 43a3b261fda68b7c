// A merge lease held by a live process in another pid namespace on the same host (as a container with host
// networking is: same hostname, pids of its own) is not taken for dead, even where its pid is free in this
// namespace: the lease is waited for, not taken over. The holder is the built indexer code (dist/) run in a
// real pid namespace of its own (unshare), its pid set to one that no process of this namespace has.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { keysOf, loadLayout } from "../../../src/dedupe/indexLayout.js";
import { MergeLease } from "../../../src/dedupe/mergeLease.js";
import { isHolderGone } from "../../../src/ownership/processIdentity.js";
import { usePrivateRedis } from "../../helpers/redis.js";

const redis = usePrivateRedis();
const children: ChildProcess[] = [];
afterAll(() => children.forEach((child) => child.kill("SIGKILL")));

const canUnshare = spawnSync("unshare", ["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "true"]).status === 0;

/** A pid no process of this namespace has now. */
function freePid(): number {
  for (let pid = 3000; pid < 4_000_000; pid++) if (!existsSync(`/proc/${pid}`)) return pid;
  throw new Error("no free pid");
}

// The holder: takes the merge lease with the built code, says so, and holds it (renewing) until killed.
const HOLDER = `
const { Redis } = await import("ioredis");
const { loadLayout } = await import(${JSON.stringify(resolve("dist/src/dedupe/indexLayout.js"))});
const { MergeLease } = await import(${JSON.stringify(resolve("dist/src/dedupe/mergeLease.js"))});
const client = new Redis(process.argv[1]);
await loadLayout(client, false);
await MergeLease.acquire(client);
console.log("held " + process.pid);
`;

describe("a lease holder in another pid namespace on the same host", () => {
  it.skipIf(!canUnshare)("is not judged dead where its pid is free here: its merge lease is waited for", async () => {
    const pid = freePid();
    // In the new namespace, the next pid given out is `pid` (ns_last_pid): the holder's pid there.
    const child = spawn("unshare", [
      "--user", "--map-root-user", "--pid", "--fork", "--kill-child", "--mount-proc",
      "sh", "-c", `echo ${pid - 1} > /proc/sys/kernel/ns_last_pid && node --input-type=module -e '${HOLDER}' "$0"`, redis.url,
    ], { stdio: ["ignore", "pipe", "pipe"], cwd: resolve(".") });
    children.push(child);
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const held = await new Promise<string>((done, fail) => {
      child.stdout.on("data", (d: Buffer) => /held \d+/.test(d.toString()) && done(d.toString().trim()));
      child.on("exit", (code) => fail(new Error(`holder exited (${code}): ${stderr}`)));
    });
    expect(held).toBe(`held ${pid}`);
    expect(existsSync(`/proc/${pid}`)).toBe(false);

    const client = new Redis(redis.url);
    try {
      await loadLayout(client, false);
      const holder = (await client.get(keysOf(client).mergeLease))!;
      expect(holder).toBeTruthy();
      expect(isHolderGone(holder)).toBe(false);
      expect(isHolderGone(`${holder}:0c5e7a11`)).toBe(false); // an import lease's "<holder>:<take>"

      // Waited for, not taken over, while its holder lives (and renews it).
      let acquired: MergeLease | null = null;
      const acquiring = MergeLease.acquire(client).then((lease) => (acquired = lease));
      await new Promise((done) => setTimeout(done, 2000));
      expect(acquired).toBeNull();
      expect(await client.get(keysOf(client).mergeLease)).toBe(holder);

      // Its holder gone, the lease is free once it expires (here: at once, so the test need not wait 10 s).
      child.kill("SIGKILL");
      await client.del(keysOf(client).mergeLease);
      const lease = await acquiring;
      await lease.release();
    } finally {
      client.disconnect();
    }
  }, 30_000);
});
