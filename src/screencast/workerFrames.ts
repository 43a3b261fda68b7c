import type { CDPSession, Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { CdpScreencast, type ScreencastFrame, type ScreencastSettings } from "./cdpScreencast.js";
import type { WorkerPacket, WorkerState } from "./livePackets.js";

/** browsertrix-crawler's frame size (640x480 at most); JPEG rather than its PNG, and at most 4 frames a second a tab. */
export const FRAME_SIZE = { width: 640, height: 480 };
const SETTINGS: ScreencastSettings = { quality: 50, maxWidth: FRAME_SIZE.width, maxHeight: FRAME_SIZE.height, minFrameIntervalMs: 250 };

/**
 * What a page worker and the work loop tell the live view of one worker. Every call returns at once and
 * never throws: the crawl does not wait for the live view.
 */
export interface LiveWorker {
  /** The worker opened a tab (its first, or a fresh one after a failure or a browser restart). */
  tabOpened(tab: Page): void;
  /** Its tab is about to close. */
  tabClosed(): void;
  pageStarted(url: string): void;
  pageEnded(): void;
  /** No page to take now; others may still add some. */
  waiting(): void;
  /** The worker has finished. */
  done(): void;
}

/** A LiveWorker that does nothing (no live view). */
export const NO_LIVE_WORKER: LiveWorker = { tabOpened() {}, tabClosed() {}, pageStarted() {}, pageEnded() {}, waiting() {}, done() {} };

/** One worker's tab as the live view sees it: its URL and state, and its screencast while someone watches. */
class WorkerCast implements LiveWorker {
  private url = "";
  private state: WorkerState = "waiting";
  private tab: Page | null = null;
  private session: CDPSession | null = null;
  private cast: CdpScreencast | null = null;
  private starting = false;
  /** Bumped when the tab changes: a frame or a start of the old tab is ignored. */
  private generation = 0;
  private lastFrame: string | undefined;

  constructor(
    private readonly index: number,
    private readonly owner: WorkerFrames,
  ) {}

  tabOpened(tab: Page): void {
    this.generation += 1;
    void this.stopCast();
    this.tab = tab;
    if (this.owner.watched) void this.startCast();
  }

  tabClosed(): void {
    this.generation += 1;
    this.tab = null;
    void this.stopCast();
  }

  pageStarted(url: string): void {
    this.url = url;
    this.setState("loading");
  }

  pageEnded(): void {
    this.setState("between pages");
  }

  waiting(): void {
    if (this.state !== "waiting") this.setState("waiting");
  }

  done(): void {
    this.setState("done");
  }

  /** The latest packet of this worker, its last frame included unless `withFrame` is false (a change of state only). */
  packet(withFrame = true): WorkerPacket {
    const data = withFrame ? this.lastFrame : undefined;
    return { msg: "screencast", id: this.owner.idOf(this.index), url: this.url, ...(data !== undefined ? { data } : {}), state: this.state, process: this.owner.process, worker: this.index };
  }

  private setState(state: WorkerState): void {
    this.state = state;
    this.owner.publish(this.packet(false));
  }

  async startCast(): Promise<void> {
    const tab = this.tab;
    if (!tab || this.cast || this.starting) return;
    const generation = this.generation;
    this.starting = true;
    try {
      const session = await tab.createCDPSession();
      const cast = await CdpScreencast.start(session, (frame) => this.frame(frame, generation), SETTINGS);
      if (generation !== this.generation || !this.owner.watched) {
        await cast.stop();
        await session.detach().catch(() => undefined);
        return;
      }
      this.session = session;
      this.cast = cast;
      logger.debug("screencast", "screencast started", { worker: this.index });
    } catch (err) {
      // The tab closed meanwhile (a failed page, a browser restart): its next tab is cast.
      logger.debug("screencast", "screencast not started", { worker: this.index, error: errorMessage(err) });
    } finally {
      this.starting = false;
    }
    // Watched again, or a new tab, while this start was under way.
    if (!this.cast && this.owner.watched && this.tab && this.generation !== generation) void this.startCast();
  }

  async stopCast(): Promise<void> {
    const { cast, session } = this;
    this.cast = null;
    this.session = null;
    await cast?.stop();
    await session?.detach().catch(() => undefined);
  }

  private frame(frame: ScreencastFrame, generation: number): void {
    if (generation !== this.generation) return;
    // Between two fragments of one page (--allowHashUrls) the tab shows about:blank: keep the last frame.
    if (this.tab?.url().startsWith("about:blank")) return;
    this.lastFrame = frame.data;
    this.owner.publish(this.packet());
  }
}

/**
 * The live view's side of this process's workers: their state, URL and last frame, and their
 * screencasts, which run only while `watched` (someone looks at a live view of this crawl).
 */
export class WorkerFrames {
  private readonly workers: WorkerCast[];
  private isWatched = false;

  constructor(
    count: number,
    /** This process, host:pid. */
    readonly process: string,
    /** A worker's id in packets: its number, or "<process>/<number>" when several processes are watched together. */
    readonly idOf: (index: number) => number | string,
    readonly publish: (packet: WorkerPacket) => void,
  ) {
    this.workers = Array.from({ length: count }, (_, i) => new WorkerCast(i, this));
  }

  get watched(): boolean {
    return this.isWatched;
  }

  worker(index: number): LiveWorker {
    return this.workers[index] ?? NO_LIVE_WORKER;
  }

  /** Start every tab's screencast when the first viewer comes, stop them all when the last one leaves. */
  setWatched(watched: boolean): void {
    if (watched === this.isWatched) return;
    this.isWatched = watched;
    logger.debug("screencast", watched ? "watched: screencasts started" : "not watched: screencasts stopped", { workers: this.workers.length });
    for (const worker of this.workers) void (watched ? worker.startCast() : worker.stopCast());
  }

  /** Every worker's latest packet, last frame included (for a viewer that has just come). */
  packets(): WorkerPacket[] {
    return this.workers.map((w) => w.packet());
  }

  async stop(): Promise<void> {
    this.isWatched = false;
    await Promise.all(this.workers.map((w) => w.stopCast()));
  }
}
