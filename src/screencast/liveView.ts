import { hostname } from "node:os";
import type { Cluster, Redis } from "ioredis";
import { logger, type LogEntry } from "../log/logger.js";
import type { ProgressFigures } from "../log/progress.js";
import type { LivePacket, StatsPacket } from "./livePackets.js";
import { LiveViewServer } from "./liveViewServer.js";
import { RedisCast, type CastChannels } from "./redisCast.js";
import { ViewerHub } from "./viewerHub.js";
import { FRAME_SIZE, WorkerFrames, type LiveWorker } from "./workerFrames.js";
import { registerSecrets } from "../log/secrets.js";
import { testSeams } from "../util/testSeams.js";

/** Test seam (TestSeams.liveViewOffLoopback): the live view on a 127.0.0.x address acts as it would off loopback. */
function offLoopbackForTests(): boolean {
  return testSeams().liveViewOffLoopback();
}

export type { LiveWorker } from "./workerFrames.js";
export { NO_LIVE_WORKER } from "./workerFrames.js";

/** The crawl's end as the live view shows it (CrawlStats' figures): a stats packet's figures, with the status. */
export type FinalFigures = Omit<StatsPacket, "msg" | "final" | "status"> & { status: string };

/** How long the last figures may take to reach the viewers when the crawl ends. */
const CLOSE_GRACE_MS = 2000;

/**
 * Watching a crawl (--screencastPort, --screencastRedis): this process's workers (workerFrames.ts), the
 * viewers of its page (viewerHub.ts, liveViewServer.ts) and, with --screencastRedis, the other processes
 * of the crawl (redisCast.ts). Screencasts run only while someone watches, here or, with --screencastRedis,
 * in any process's live view.
 */
export class LiveView {
  private readonly hub = new ViewerHub();
  private readonly frames: WorkerFrames;
  private readonly process = `${hostname()}:${process.pid}`;
  private readonly started = Date.now();
  private server: LiveViewServer | null = null;
  private cast: RedisCast | null = null;
  private watchedHere = false;
  private watchedElsewhere = false;

  private constructor(workers: number) {
    this.frames = new WorkerFrames(workers, this.process, (i) => (this.cast ? `${this.process}/${i}` : i), (packet) => this.send(packet));
    this.hub.receive({ msg: "init", width: FRAME_SIZE.width, height: FRAME_SIZE.height, browsers: workers });
    this.hub.onViewers = (count) => {
      this.watchedHere = count > 0;
      void this.cast?.localViewers(count);
      this.frames.setWatched(this.watchedHere || this.watchedElsewhere);
      logger.debug("screencast", "live view viewers", { viewers: count });
    };
  }

  /** The live view of `workers` workers; serving its page on `port` (0: no page here, e.g. --screencastRedis alone). */
  static async start(port: number, workers: number): Promise<LiveView> {
    const view = new LiveView(workers);
    if (port) {
      view.server = await LiveViewServer.start(port, view.hub, undefined, { offLoopback: offLoopbackForTests() });
      const { token } = view.server;
      // The token is for the operator's eyes: on stderr once, never in the log file (where it shows as ***).
      if (token) registerSecrets([token]);
      logger.milestone("crawl", `watch the crawl at ${view.server.url}`, { port: view.server.port, host: view.server.host });
      if (token) logger.toOperator("crawl", `watch the crawl at ${view.server.url} (the link holds a secret token: whoever has it sees the crawled pages)`);
    }
    return view;
  }

  /** --screencastRedis: share workers with the other processes of the crawl through its Redis. */
  async shareThrough(stateRedis: Redis | Cluster, channels: CastChannels): Promise<void> {
    this.cast = await RedisCast.open(stateRedis, channels, this.process, this.hub, {
      watchedElsewhere: (watched) => {
        this.watchedElsewhere = watched;
        this.frames.setWatched(this.watchedHere || this.watchedElsewhere);
      },
      latest: () => this.frames.packets(),
    });
    // A viewer may have come while the crawl was joining (the page is served from the start): listen for it now.
    if (this.hub.count > 0) await this.cast.localViewers(this.hub.count);
    logger.info("screencast", "live view shared through the crawl Redis", { channel: channels.screencastChannel });
  }

  get url(): string | null {
    return this.server?.url ?? null;
  }

  worker(index: number): LiveWorker {
    return this.frames.worker(index);
  }

  /** The progress figures, each second (crawl-wide counts from the crawl Redis, this process's bytes). */
  progress(figures: ProgressFigures): void {
    const { done, queued, pending, failed, failedAttempts, bytesWritten } = figures;
    this.hub.receive({ msg: "stats", crawled: done, queued, pending, failed, failedAttempts, bytesWritten, elapsedSeconds: (Date.now() - this.started) / 1000 });
  }

  /** A log entry: warnings and errors go to the recent warnings. */
  logEntry(entry: LogEntry): void {
    if ((entry.logLevel !== "warn" && entry.logLevel !== "error") || entry.context === "screencast") return;
    const url = typeof entry.details.url === "string" ? entry.details.url : undefined;
    this.send({ msg: "warning", timestamp: entry.timestamp, level: entry.logLevel, context: entry.context, message: entry.message, ...(url ? { url } : {}), process: this.process });
  }

  /** The crawl has ended: its final figures (as in --statsFilename). */
  finished(figures: FinalFigures): void {
    const { crawled, queued, pending, failed, failedAttempts, bytesWritten, elapsedSeconds, status } = figures;
    const packet: StatsPacket = { msg: "stats", crawled, queued, pending, failed, failedAttempts, bytesWritten, elapsedSeconds, status, final: true };
    this.hub.receive(packet);
  }

  private send(packet: LivePacket): void {
    this.hub.receive(packet);
    this.cast?.publish(packet);
  }

  async close(): Promise<void> {
    await this.frames.stop();
    const closing = this.frames.packets().map((p) => ({ msg: "close" as const, id: p.id }));
    await this.cast?.close(closing);
    await this.hub.closeAll(CLOSE_GRACE_MS);
    await this.server?.close();
  }
}
