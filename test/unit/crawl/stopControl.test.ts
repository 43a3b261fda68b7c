import { describe, expect, it } from "vitest";
import { StopControl } from "../../../src/crawl/stopControl.js";
import { IdleWorkers } from "../../../src/crawl/pages/idleWorkers.js";

const failingLater = () => new Promise<never>((_, reject) => setTimeout(() => reject(new Error("Target closed")), 20));

describe("StopControl.untilAbandoned", () => {
  it("passes the work's result through while no stop is forced", async () => {
    const stop = new StopControl();
    await expect(stop.untilAbandoned(Promise.resolve(7))).resolves.toBe(7);
    stop.dispose();
  });

  it("abandons in-flight work at a second signal; the work failing afterwards goes nowhere", async () => {
    const stop = new StopControl();
    const abandoned = stop.untilAbandoned(failingLater());
    stop.request("signal");
    stop.request("signal");
    await expect(abandoned).rejects.toThrow("abandoned");
    // An unhandled rejection here would fail the run (vitest reports it): the process must not crash.
    await new Promise((r) => setTimeout(r, 50));
    stop.dispose();
  });

  it("work started after the second signal is refused at once, and its own failure is handled (it once crashed the crawler)", async () => {
    const stop = new StopControl();
    stop.request("signal");
    stop.request("signal");
    expect(stop.forced).toBe(true);
    await expect(stop.untilAbandoned(failingLater())).rejects.toThrow("abandoned");
    await new Promise((r) => setTimeout(r, 50));
    stop.dispose();
  });
});

describe("IdleWorkers: workers with nothing to take wake when a page of this process ends", () => {
  const settledWithin = async (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);

  it("a page end wakes every waiting worker long before its wait is over", async () => {
    const stop = new StopControl();
    const idle = new IdleWorkers();
    const waits = [0, 1, 2].map(() => idle.wait(idle.mark(), 60_000, (ms, until) => stop.sleep(ms, until)));
    expect(await settledWithin(Promise.race(waits), 50)).toBe(false);
    idle.pageEnded();
    expect(await settledWithin(Promise.all(waits), 1000)).toBe(true);
    stop.dispose();
  });

  it("a page that ended after the worker looked at the queue (its links possibly missed) means no wait at all", async () => {
    const stop = new StopControl();
    const idle = new IdleWorkers();
    const mark = idle.mark();
    idle.pageEnded();
    expect(await settledWithin(idle.wait(mark, 60_000, (ms, until) => stop.sleep(ms, until)), 1000)).toBe(true);
    // With a mark taken after that end, the worker waits (until a stop here).
    const waiting = idle.wait(idle.mark(), 60_000, (ms, until) => stop.sleep(ms, until));
    expect(await settledWithin(waiting, 50)).toBe(false);
    stop.request("signal");
    expect(await settledWithin(waiting, 1000)).toBe(true);
    stop.dispose();
  });
});
