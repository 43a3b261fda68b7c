import { afterEach, describe, expect, it, vi } from "vitest";
import { logger } from "../../../src/log/logger.js";
import { callInEachFrame, callInFrame } from "../../../src/util/frameCalls.js";

/** A frame as puppeteer's: one detached throws at once when called, one alive answers. */
function frame(url: string, state: "alive" | "detached" | "navigated") {
  return {
    url: () => url,
    evaluate(): Promise<string> {
      if (state === "detached") throw new Error(`Attempted to use detached Frame '${url}'.`);
      if (state === "navigated") return Promise.reject(new Error("Execution context was destroyed, most likely because of a navigation."));
      return Promise.resolve(`read ${url}`);
    },
  };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("callInFrame", () => {
  it("rejects with what a call throws before giving its promise", async () => {
    await expect(callInFrame(frame("http://ads.test/a", "detached"), (f) => f.evaluate())).rejects.toThrow("Attempted to use detached Frame 'http://ads.test/a'.");
  });

  it("gives what the call gives", async () => {
    await expect(callInFrame(frame("http://site.test/", "alive"), (f) => f.evaluate())).resolves.toBe("read http://site.test/");
  });
});

describe("callInEachFrame", () => {
  it("settles every frame in order and skips the failed ones with a debug line each", async () => {
    const debug = vi.spyOn(logger, "debug").mockImplementation(() => undefined);
    const frames = [frame("http://site.test/", "alive"), frame("http://ads.test/gone", "detached"), frame("http://ads.test/moved", "navigated"), frame("http://site.test/inner", "alive")];
    const settled = await callInEachFrame(frames, (f) => f.evaluate(), { context: "links", what: "links", url: "http://site.test/" });
    expect(settled).toEqual([
      { status: "fulfilled", value: "read http://site.test/" },
      { status: "rejected", reason: new Error("Attempted to use detached Frame 'http://ads.test/gone'.") },
      { status: "rejected", reason: new Error("Execution context was destroyed, most likely because of a navigation.") },
      { status: "fulfilled", value: "read http://site.test/inner" },
    ]);
    expect(debug.mock.calls).toEqual([
      ["links", "links skipped in a frame", { url: "http://site.test/", frameUrl: "http://ads.test/gone", error: "Attempted to use detached Frame 'http://ads.test/gone'." }],
      ["links", "links skipped in a frame", { url: "http://site.test/", frameUrl: "http://ads.test/moved", error: "Execution context was destroyed, most likely because of a navigation." }],
    ]);
  });

  it("logs nothing when every frame answers", async () => {
    const debug = vi.spyOn(logger, "debug").mockImplementation(() => undefined);
    const settled = await callInEachFrame([frame("http://site.test/", "alive")], (f) => f.evaluate(), { context: "behavior", what: "autofetch sweep", url: "http://site.test/" });
    expect(settled).toEqual([{ status: "fulfilled", value: "read http://site.test/" }]);
    expect(debug).not.toHaveBeenCalled();
  });
});
