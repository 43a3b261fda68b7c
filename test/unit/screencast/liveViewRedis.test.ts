import { EventEmitter } from "node:events";
import { WebSocket } from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerPacket } from "../../../src/screencast/livePackets.js";
import { LiveView } from "../../../src/screencast/liveView.js";
import { RedisCast } from "../../../src/screencast/redisCast.js";
import { freePort } from "../../../src/redis/freePort.js";
import { ViewerHub } from "../../../src/screencast/viewerHub.js";
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

/** A viewer's socket on a fast link: what is sent is written at once. */
class Socket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  received: { msg: string; id?: string; data?: string }[] = [];
  send(text: string, cb: () => void): void {
    this.received.push(JSON.parse(text) as { msg: string });
    setImmediate(cb);
  }
  close(): void {
    this.readyState = 3;
    this.emit("close");
  }
}

const frame = (process: string, data: string): WorkerPacket => ({ msg: "screencast", id: `${process}/0`, url: "http://site/", data, state: "loading", process, worker: 0 });
const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe("RedisCast (--screencastRedis)", () => {
  it("a process publishes only while another process's view has viewers; that view shows its workers", async () => {
    const channels = crawlStateKeys("live-unit");
    const hubA = new ViewerHub();
    const watchedA: boolean[] = [];
    const castA = await RedisCast.open(redis.client, channels, "A", hubA, { watchedElsewhere: (w) => watchedA.push(w), latest: () => [frame("A", "a1")] });
    hubA.onViewers = (count) => void castA.localViewers(count);
    const hubB = new ViewerHub();
    let watchedB = false;
    const castB = await RedisCast.open(redis.client, channels, "B", hubB, { watchedElsewhere: (w) => (watchedB = w), latest: () => [frame("B", "b1")] });
    try {
      castB.publish(frame("B", "unwatched"));
      const viewer = new Socket();
      hubA.add(viewer as unknown as WebSocket);
      // "connect": B learns at once it is watched and sends its workers' latest frames again.
      await until(() => viewer.received.some((p) => p.data === "b1"), "B's latest frame");
      expect(watchedB).toBe(true);
      castB.publish(frame("B", "b2"));
      await until(() => viewer.received.some((p) => p.data === "b2"), "B's next frame");
      expect(viewer.received.some((p) => p.data === "unwatched")).toBe(false);
      // A's own view does not count as someone watching elsewhere.
      expect(watchedA).toEqual([]);
      viewer.close();
      await until(() => !watchedB, "B to stop");
    } finally {
      await castA.close([]);
      await castB.close([]);
    }
  });

  it("a viewer who came before the process joined the crawl Redis is heard: the view listens to the other processes", async () => {
    // The page is served from the crawl's start, the Redis share only once the crawl has joined: on a busy
    // machine a viewer comes in between (seen in the e2e test: the other process never knew it was watched).
    const channels = crawlStateKeys("live-early-viewer");
    const view = await LiveView.start(await freePort(), 1);
    const viewer = new WebSocket(`${view.url!.replace("http", "ws")}ws`);
    const received: { data?: string }[] = [];
    viewer.on("message", (text: Buffer) => received.push(JSON.parse(text.toString()) as { data?: string }));
    await new Promise((resolve, reject) => viewer.once("open", resolve).once("error", reject));
    const other = new ViewerHub();
    let otherWatched = false;
    const otherCast = await RedisCast.open(redis.client, channels, "B", other, { watchedElsewhere: (w) => (otherWatched = w), latest: () => [frame("B", "b1")] });
    try {
      await view.shareThrough(redis.client, channels);
      await until(() => otherWatched, "the other process to know it is watched");
      await until(() => received.some((p) => p.data === "b1"), "the other process's latest frame");
      const [, subscribers] = (await redis.client.pubsub("NUMSUB", channels.screencastChannel)) as [string, number];
      expect(Number(subscribers)).toBe(1);
    } finally {
      viewer.close();
      await otherCast.close([]);
      await view.close();
    }
  });
});
