import { Frontier } from "../../../src/frontier/frontier.js";
import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Membership } from "../../../src/state/membership/membership.js";
import { isHolderGone, isLocalProcessGone, localityTag, newHolderId, newProcessId, parseProcessId } from "../../../src/ownership/processIdentity.js";
import { pidNamespace, processStartTime } from "../../../src/util/procfs.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

/** A pid that was just freed (a child that exited and was reaped). */
async function deadPid(): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn("true");
    child.on("close", () => resolve(child.pid!));
  });
}

/** The locality a process in another pid namespace (with the same host name and boot) has. */
function otherNamespaceTag(): string {
  process.env.CRAWLER_TEST_PID_NAMESPACE = "elsewhere";
  try {
    return localityTag()!;
  } finally {
    delete process.env.CRAWLER_TEST_PID_NAMESPACE;
  }
}

describe("process identity", () => {
  it("names host, pid, start time and pid namespace; the test hook changes the namespace only", () => {
    const id = newProcessId("c0ffee");
    expect(parseProcessId(id)).toEqual({ host: hostname(), pid: process.pid, startTime: processStartTime(process.pid), locality: localityTag() });
    expect(pidNamespace()).toMatch(/^pid:\[\d+\]$/);
    expect(otherNamespaceTag()).not.toBe(localityTag());
    expect(parseProcessId("old-host-123-abcd")).toBeNull();
  });

  it("a pid is judged only within its own pid namespace", async () => {
    const pid = await deadPid();
    const here = localityTag()!;
    const start = processStartTime(process.pid)!;
    expect(isLocalProcessGone(newProcessId("c0ffee"))).toBe(false);
    expect(isLocalProcessGone(`${hostname()}-${pid}-${start}-${here}-c0ffee`)).toBe(true);
    // This process's pid with another start time: the pid was reused, the process named is gone.
    expect(isLocalProcessGone(`${hostname()}-${process.pid}-1-${here}-c0ffee`)).toBe(true);
    // Same host name, another namespace: its pids mean nothing here, whatever they are.
    expect(isLocalProcessGone(`${hostname()}-${pid}-${start}-${otherNamespaceTag()}-c0ffee`)).toBe(false);
    // Ids of older versions (host-pid-random) and unknown localities: heartbeat only.
    expect(isLocalProcessGone(`${hostname()}-${pid}-c0ffee`)).toBe(false);
    expect(isLocalProcessGone(`${hostname()}-${pid}-x-x-c0ffee`)).toBe(false);
  });
});

describe("reaping dead processes of this namespace", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it("fences a dead process of this namespace at once, never one of another namespace with the same host name", async () => {
    const me = new Membership(redis.client, "reap", newProcessId("aaaa"), 60_000);
    const pid = await deadPid();
    const start = processStartTime(process.pid)!;
    const deadHere = `${hostname()}-${pid}-${start}-${localityTag()}-bbbb`;
    const container = `${hostname()}-${pid}-${start}-${otherNamespaceTag()}-cccc`;
    for (const id of [me.processId, deadHere, container]) await new Membership(redis.client, "reap", id, 60_000).heartbeat();
    // The leases are the frontier's (one shard on a plain Redis), which the membership asks who holds them.
    const frontier = new Frontier(redis.client, me);
    await frontier.shards();
    await redis.client.hset(me.keys.frontierShard(0).leases, "http://a.test/1", deadHere, "http://a.test/2", container, "http://a.test/3", me.processId);
    expect(await me.reapLocalDeadProcesses(frontier)).toEqual([deadHere]);
    expect(await redis.client.smembers(me.keys.fenced)).toEqual([deadHere]);
    expect(await me.isAlive(container)).toBe(true);
  });
});

// The one liveness rule for lease holders (merge lease, import leases): a holder is judged gone without
// waiting for its lease only when it is of this process's pid namespace and boot and its pid is free or
// reused. Same hostname is never enough: a holder of another pid namespace (a container with host
// networking) or of another form is waited for, whatever its pid is here.
describe("lease holder ids", () => {
  it("are this process's id: host, pid, start time, locality, and a random part of each lease", () => {
    const [a, b] = [newHolderId(), newHolderId()];
    expect(a).not.toBe(b);
    for (const id of [a, b]) {
      expect(parseProcessId(id)).toEqual({ host: hostname(), pid: process.pid, startTime: processStartTime(process.pid), locality: localityTag() });
    }
  });

  it("are judged gone only within this pid namespace, for a lease value or an import lease's token", async () => {
    const here = localityTag()!;
    const pid = await deadPid();
    const start = processStartTime(process.pid)!;
    const alive = newHolderId();
    const goneHere = `${hostname()}-${pid}-${start}-${here}-0badc0de`;
    const otherNamespace = `${hostname()}-${pid}-${start}-${otherNamespaceTag()}-0badc0de`;
    expect(isHolderGone(alive)).toBe(false);
    expect(isHolderGone(`${alive}:5e1f5e1f-aaaa`)).toBe(false);
    expect(isHolderGone(goneHere)).toBe(true);
    expect(isHolderGone(`${goneHere}:5e1f5e1f-aaaa`)).toBe(true);
    // Same hostname, a pid free here, another pid namespace: alive as far as this process can tell.
    expect(isHolderGone(otherNamespace)).toBe(false);
    expect(isHolderGone(`${otherNamespace}:5e1f5e1f-aaaa`)).toBe(false);
    // Another live pid of this namespace (this test's parent), and this very process: not gone.
    expect(isHolderGone(`${hostname()}-${process.ppid}-${processStartTime(process.ppid)}-${here}-0badc0de`)).toBe(false);
    // The hostname-and-pid form tells nothing of a namespace: such a holder's lease is waited for.
    expect(isHolderGone(`${hostname()}-${pid}-0badc0de`)).toBe(false);
    expect(isHolderGone(`${hostname()}-${pid}-0badc0de:5e1f5e1f`)).toBe(false);
  });
});
