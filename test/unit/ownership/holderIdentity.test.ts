// The one liveness rule for lease holders (merge lease, import leases): a holder is judged gone without
// waiting for its lease only when it is of this process's pid namespace and boot and its pid is free or
// reused. Same hostname is never enough: a holder of another pid namespace (a container with host
// networking) or of another form is waited for, whatever its pid is here.
import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { isHolderGone, localityTag, newHolderId, parseProcessId } from "../../../src/ownership/processIdentity.js";
import { processStartTime } from "../../../src/util/procfs.js";

/** A pid that was just freed (a child that exited and was reaped). */
async function deadPid(): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn("true");
    child.on("close", () => resolve(child.pid!));
  });
}

/** The locality of a process in another pid namespace with the same boot and host name. */
function otherNamespaceTag(): string {
  process.env.CRAWLER_TEST_PID_NAMESPACE = "elsewhere";
  try {
    return localityTag()!;
  } finally {
    delete process.env.CRAWLER_TEST_PID_NAMESPACE;
  }
}

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
