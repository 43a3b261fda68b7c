import { describe, expect, it } from "vitest";
import { StopControl } from "../src/crawl/stopControl.js";

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
