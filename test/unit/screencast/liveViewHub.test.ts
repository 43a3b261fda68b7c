import { EventEmitter } from "node:events";
import type { WebSocket } from "ws";
import { describe, expect, it } from "vitest";
import type { WorkerPacket } from "../../../src/screencast/livePackets.js";
import { RECENT_WARNINGS, ViewerHub } from "../../../src/screencast/viewerHub.js";

/** A WebSocket whose writes complete only when the test says so (a viewer on a slow link). */
class SlowSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  sent: string[] = [];
  private callbacks: (() => void)[] = [];
  send(text: string, cb: () => void): void {
    this.sent.push(text);
    this.callbacks.push(cb);
  }
  /** The network takes everything handed to it so far. */
  drain(): void {
    while (this.callbacks.length) this.callbacks.shift()!();
  }
  close(): void {
    this.readyState = 3;
    this.emit("close");
  }
  terminate(): void {
    this.close();
  }
}

const frame = (id: number, n: number): WorkerPacket => ({ msg: "screencast", id, url: `http://x/${id}`, data: `frame-${n}`, state: "loading", process: "p", worker: id });
const packets = (socket: SlowSocket) => socket.sent.map((t) => JSON.parse(t) as { msg: string; id?: number; data?: string; message?: string });

describe("ViewerHub", () => {
  it("a slow viewer gets each worker's latest frame, never a queue of old ones", () => {
    const hub = new ViewerHub();
    const socket = new SlowSocket();
    hub.add(socket as unknown as WebSocket);
    for (let n = 0; n < 1000; n++) hub.receive(frame(n % 2, n));
    // Two messages on their way, the rest waiting: one per worker.
    expect(socket.sent).toHaveLength(2);
    socket.drain();
    socket.drain();
    expect(packets(socket).slice(2).map((p) => p.data)).toEqual(["frame-998", "frame-999"]);
    expect(hub.dropped).toBe(996);
  });

  it("warnings waiting for a slow viewer are capped", () => {
    const hub = new ViewerHub();
    const socket = new SlowSocket();
    hub.add(socket as unknown as WebSocket);
    for (let n = 0; n < 500; n++) hub.receive({ msg: "warning", timestamp: "", level: "warn", context: "page", message: `w${n}`, process: "p" });
    for (let i = 0; i < 100; i++) socket.drain();
    expect(socket.sent.length).toBeLessThanOrEqual(2 + 64);
    expect(packets(socket).at(-1)?.message).toBe("w499");
  });

  it("a newcomer sees every worker's last frame (kept through state-only packets), the figures and the recent warnings; viewers are counted", () => {
    const hub = new ViewerHub();
    const counts: number[] = [];
    hub.onViewers = (n) => counts.push(n);
    hub.receive(frame(0, 1));
    hub.receive({ msg: "screencast", id: 0, url: "http://x/next", state: "between pages", process: "p", worker: 0 });
    hub.receive({ msg: "stats", crawled: 3, queued: 1, pending: 1, failed: 0, failedAttempts: 0, bytesWritten: 10, elapsedSeconds: 1 });
    for (let n = 0; n < 30; n++) hub.receive({ msg: "warning", timestamp: "", level: "warn", context: "page", message: `w${n}`, process: "p" });
    const socket = new SlowSocket();
    hub.add(socket as unknown as WebSocket);
    for (let i = 0; i < 50; i++) socket.drain();
    const got = packets(socket);
    expect(got[0]).toMatchObject({ msg: "screencast", id: 0, url: "http://x/next", state: "between pages", data: "frame-1" });
    expect(got[1]).toMatchObject({ msg: "stats", crawled: 3 });
    expect(got.filter((p) => p.msg === "warning").map((p) => p.message)).toEqual(Array.from({ length: RECENT_WARNINGS }, (_, i) => `w${30 - RECENT_WARNINGS + i}`));
    socket.close();
    expect(counts).toEqual([1, 0]);
  });
});
