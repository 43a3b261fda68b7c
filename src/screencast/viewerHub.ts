import type { WebSocket } from "ws";
import { replacementKey, type LivePacket, type WarningPacket } from "./livePackets.js";

/** Messages handed to a viewer's socket and not yet written out to the network: more wait (and are replaced) in its queue. */
const MAX_IN_FLIGHT = 2;
/** At most this many messages wait for a slow viewer: a worker's newer frame replaces its older one, the oldest others are dropped. */
const MAX_WAITING = 64;
/** Warnings a viewer that connects gets at once. */
export const RECENT_WARNINGS = 20;

/**
 * One page watching the crawl. A viewer that reads slower than frames come never makes anything queue up:
 * while two messages are on their way to it, newer ones wait, each worker's latest frame replacing the
 * one before (it sees fewer frames, never old ones), the queue capped.
 */
class Viewer {
  private inFlight = 0;
  private readonly waiting = new Map<string, string>();
  private seq = 0;
  dropped = 0;

  constructor(readonly socket: WebSocket) {}

  send(key: string | null, text: string): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    if (this.inFlight < MAX_IN_FLIGHT && this.waiting.size === 0) return this.write(text);
    const slot = key ?? `once ${++this.seq}`;
    if (this.waiting.delete(slot)) this.dropped += 1;
    else if (this.waiting.size >= MAX_WAITING) {
      const oldest = this.waiting.keys().next().value;
      if (oldest !== undefined) this.waiting.delete(oldest);
      this.dropped += 1;
    }
    this.waiting.set(slot, text);
  }

  /** Nothing left to write to it. */
  get drained(): boolean {
    return this.inFlight === 0 && this.waiting.size === 0;
  }

  private write(text: string): void {
    this.inFlight += 1;
    this.socket.send(text, () => {
      this.inFlight -= 1;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.waiting.size && this.socket.readyState === this.socket.OPEN) {
      const [slot, text] = this.waiting.entries().next().value as [string, string];
      this.waiting.delete(slot);
      this.write(text);
    }
  }
}

/**
 * The viewers of one live view server and what a newcomer must see at once: the last packet of every
 * worker (its last frame kept when later packets only changed its state), the latest figures and the
 * recent warnings. `onViewers` hears the number of viewers change (the screencast runs only while it is above 0).
 */
export class ViewerHub {
  private readonly viewers = new Set<Viewer>();
  private readonly latest = new Map<string, LivePacket>();
  private warnings: WarningPacket[] = [];
  onViewers: (count: number) => void = () => undefined;

  get count(): number {
    return this.viewers.size;
  }

  add(socket: WebSocket): void {
    const viewer = new Viewer(socket);
    for (const [key, packet] of this.latest) viewer.send(key, JSON.stringify(packet));
    for (const warning of this.warnings) viewer.send(null, JSON.stringify(warning));
    this.viewers.add(viewer);
    socket.on("close", () => {
      if (this.viewers.delete(viewer)) this.onViewers(this.viewers.size);
    });
    socket.on("error", () => socket.terminate());
    this.onViewers(this.viewers.size);
  }

  /** Remember `packet` for newcomers and send it to every viewer. */
  receive(packet: LivePacket): void {
    const key = replacementKey(packet);
    if (packet.msg === "close") this.latest.delete(`worker ${packet.id}`);
    else if (packet.msg === "warning") this.warnings = [...this.warnings, packet].slice(-RECENT_WARNINGS);
    else if (key) {
      const before = this.latest.get(key);
      // A packet that only tells a worker's new state keeps its last frame for newcomers.
      const keep = packet.msg === "screencast" && packet.data === undefined && before?.msg === "screencast" ? before.data : undefined;
      this.latest.set(key, packet.msg === "screencast" && keep !== undefined ? { ...packet, data: keep } : packet);
    }
    if (!this.viewers.size) return;
    const text = JSON.stringify(packet);
    for (const viewer of this.viewers) viewer.send(key, text);
  }

  /** Forget workers of other processes (nothing tells of them while this hub does not listen to the crawl Redis). */
  forgetOthers(process: string): void {
    for (const [key, packet] of this.latest) if (packet.msg === "screencast" && packet.process !== process) this.latest.delete(key);
  }

  /** Messages dropped for slow viewers so far (those still connected). */
  get dropped(): number {
    let sum = 0;
    for (const viewer of this.viewers) sum += viewer.dropped;
    return sum;
  }

  /** Close every viewer's connection, after what was sent to it is written out (at most `graceMs`). */
  async closeAll(graceMs: number): Promise<void> {
    const until = Date.now() + graceMs;
    while ([...this.viewers].some((v) => !v.drained) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    const sockets = [...this.viewers].map((v) => v.socket);
    this.viewers.clear();
    await Promise.all(sockets.map((socket) => new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        socket.terminate();
        resolve();
      }, graceMs);
      socket.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.close(1001, "the crawl has ended");
    })));
  }
}
