import type { Cluster, Redis } from "ioredis";
import { errorMessage, logger } from "../log/logger.js";
import { connectRedis, connectionUrl } from "../redis/connect.js";
import { replacementKey, type LivePacket } from "./livePackets.js";
import type { ViewerHub } from "./viewerHub.js";

/** How often a process asks whether a live view elsewhere watches (besides being told at once by "connect"). */
const WATCH_CHECK_MS = 2000;

export interface CastChannels {
  /** Where every process publishes its workers' packets (browsertrix-crawler's c:<crawlId>:cast). */
  screencastChannel: string;
  /** Where a live view says "connect" / "disconnect" (browsertrix-crawler's c:<crawlId>:ctrl). */
  screencastControl: string;
}

/**
 * --screencastRedis: the processes of one crawl share their workers through the crawl Redis, with
 * browsertrix-crawler's pub/sub channels and messages (its RedisPubSubTransport).
 * - A live view with viewers subscribes to the cast channel and says "connect" on the control channel; when
 *   its last viewer leaves it unsubscribes and says "disconnect". It shows the packets of the other processes
 *   from the channel, and its own process's directly.
 * - Each process publishes while the cast channel has a subscriber other than its own live view: it asks
 *   Redis (PUBSUB NUMSUB, as browsertrix-crawler's isActive) at once on "connect"/"disconnect" and every 2 s.
 *   Counting subscribers rather than connect/disconnect messages (browsertrix-crawler counts messages) means
 *   a process that starts after a viewer came, or a view that died without "disconnect", is still judged right.
 * - On "connect", every process publishes its workers' latest packets again, so the newcomer sees each
 *   worker at once (a still page sends no new frame).
 * Publishing never queues: while a worker's packet is on its way to Redis its newer ones replace each other.
 */
export class RedisCast {
  private othersWatch = false;
  private subscribed = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<string>();
  private readonly waiting = new Map<string, string>();
  private closed = false;

  private constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly channels: CastChannels,
    private readonly process: string,
    private readonly hub: ViewerHub,
    private readonly events: { watchedElsewhere(watched: boolean): void; latest(): LivePacket[] },
  ) {}

  static async open(stateRedis: Redis | Cluster, channels: CastChannels, process: string, hub: ViewerHub, events: RedisCast["events"]): Promise<RedisCast> {
    // A cluster's pub/sub reaches every node: one node's connection does.
    const url = connectionUrl(stateRedis.isCluster ? (stateRedis as Cluster).nodes("master")[0]! : (stateRedis as Redis));
    const pub = await connectRedis(url, "the crawl Redis (live view)", { failFast: true });
    const sub = await connectRedis(url, "the crawl Redis (live view)", { failFast: true }).catch((err: unknown) => {
      pub.disconnect();
      throw err;
    });
    const cast = new RedisCast(pub, sub, channels, process, hub, events);
    sub.on("message", (channel: string, message: string) => cast.message(channel, message));
    await sub.subscribe(channels.screencastControl);
    cast.timer = setInterval(() => void cast.check(false), WATCH_CHECK_MS);
    cast.timer.unref();
    await cast.check(false);
    return cast;
  }

  private message(channel: string, message: string): void {
    if (channel === this.channels.screencastControl) return void this.check(message === "connect");
    if (channel !== this.channels.screencastChannel) return;
    try {
      const packet = JSON.parse(message) as LivePacket & { process?: string };
      if (typeof packet.msg !== "string" || packet.msg === "init" || packet.msg === "stats" || packet.process === this.process) return;
      this.hub.receive(packet);
    } catch {
      // not a packet of ours
    }
  }

  /** Whether a live view other than this process's watches; `connected`: one has just come, it gets every worker's latest packet. */
  private async check(connected: boolean): Promise<void> {
    if (this.closed) return;
    try {
      const reply = (await this.pub.pubsub("NUMSUB", this.channels.screencastChannel)) as [string, number];
      const watched = Number(reply[1] ?? 0) - (this.subscribed ? 1 : 0) > 0;
      if (watched !== this.othersWatch) {
        this.othersWatch = watched;
        this.events.watchedElsewhere(watched);
      }
      if (connected && watched) for (const packet of this.events.latest()) this.publish(packet);
    } catch (err) {
      logger.debug("screencast", "cannot ask the crawl Redis who watches", { error: errorMessage(err) });
    }
  }

  /** Publish one of this process's packets, when a live view elsewhere watches. */
  publish(packet: LivePacket): void {
    if (!this.othersWatch || this.closed) return;
    const text = JSON.stringify(packet);
    const key = replacementKey(packet);
    if (key === null) return void this.send(null, text);
    if (this.inFlight.has(key)) return void this.waiting.set(key, text);
    this.send(key, text);
  }

  private send(key: string | null, text: string): void {
    if (key !== null) this.inFlight.add(key);
    void this.pub.publish(this.channels.screencastChannel, text).catch(() => undefined).finally(() => {
      if (key === null) return;
      this.inFlight.delete(key);
      const next = this.waiting.get(key);
      if (next !== undefined && !this.closed) {
        this.waiting.delete(key);
        this.send(key, next);
      }
    });
  }

  /** This process's live view has viewers (count > 0) or none any more: listen to the others or stop. */
  async localViewers(count: number): Promise<void> {
    try {
      if (count > 0 && !this.subscribed) {
        this.subscribed = true;
        await this.sub.subscribe(this.channels.screencastChannel);
        await this.pub.publish(this.channels.screencastControl, "connect");
      } else if (count === 0 && this.subscribed) {
        this.subscribed = false;
        await this.sub.unsubscribe(this.channels.screencastChannel);
        this.hub.forgetOthers(this.process);
        await this.pub.publish(this.channels.screencastControl, "disconnect");
      }
    } catch (err) {
      logger.debug("screencast", "cannot listen to the other processes' workers", { error: errorMessage(err) });
    }
  }

  /** Tell the other views this process's workers are gone, then close both connections. */
  async close(closing: LivePacket[]): Promise<void> {
    if (this.othersWatch) for (const packet of closing) this.send(null, JSON.stringify(packet));
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.race([this.pub.ping().catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
    this.sub.disconnect();
    this.pub.disconnect();
  }
}
