import { EventEmitter } from "node:events";
import type { Page } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import type { WorkerPacket } from "../../../src/screencast/livePackets.js";
import { WorkerFrames } from "../../../src/screencast/workerFrames.js";

/** A tab whose CDP sessions record the commands sent and can emit screencast frames. */
function fakeTab(url = "http://site/page") {
  const commands: string[] = [];
  const sessions: EventEmitter[] = [];
  const tab = {
    url: () => url,
    createCDPSession: async () => {
      const session = Object.assign(new EventEmitter(), {
        send: async (method: string) => void commands.push(method),
        detach: async () => void commands.push("detach"),
      });
      sessions.push(session);
      return session;
    },
  };
  const frame = (data: string) => sessions.at(-1)!.emit("Page.screencastFrame", { data, sessionId: 1, metadata: { deviceWidth: 800, deviceHeight: 600 } });
  return { tab: tab as unknown as Page, commands, frame };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe("WorkerFrames", () => {
  it("screencasts only while watched; states and frames become packets; a new tab is cast in place of the old", async () => {
    const packets: WorkerPacket[] = [];
    const frames = new WorkerFrames(2, "host:1", (i) => i, (p) => packets.push(p));
    const first = fakeTab();
    frames.worker(0).tabOpened(first.tab);
    frames.worker(0).pageStarted("http://site/page");
    await settle();
    expect(first.commands).toEqual([]);

    frames.setWatched(true);
    await settle();
    expect(first.commands).toEqual(["Page.startScreencast"]);
    first.frame("AAA");
    await settle();
    expect(packets.at(-1)).toMatchObject({ msg: "screencast", id: 0, url: "http://site/page", data: "AAA", state: "loading", worker: 0, process: "host:1" });

    frames.worker(0).pageEnded();
    expect(packets.at(-1)).toMatchObject({ state: "between pages" });
    expect(packets.at(-1)?.data).toBeUndefined();
    expect(frames.packets()[0]).toMatchObject({ data: "AAA", state: "between pages" });

    // A failed page: the worker's tab closes and a fresh one opens.
    frames.worker(0).tabClosed();
    const second = fakeTab();
    frames.worker(0).tabOpened(second.tab);
    await settle();
    expect(first.commands).toContain("Page.stopScreencast");
    expect(second.commands).toEqual(["Page.startScreencast"]);
    first.frame("OLD");
    expect(packets.some((p) => p.data === "OLD")).toBe(false);

    frames.setWatched(false);
    await settle();
    expect(second.commands).toEqual(["Page.startScreencast", "Page.stopScreencast", "detach"]);
    await frames.stop();
  });

  it("frames of about:blank are skipped: the last frame stays", async () => {
    const packets: WorkerPacket[] = [];
    const frames = new WorkerFrames(1, "host:1", (i) => i, (p) => packets.push(p));
    const blank = fakeTab("about:blank");
    frames.setWatched(true);
    frames.worker(0).tabOpened(blank.tab);
    await settle();
    blank.frame("BLANK");
    expect(packets).toEqual([]);
    await frames.stop();
  });
});
