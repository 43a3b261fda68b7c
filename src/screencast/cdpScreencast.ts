import type { CDPSession, Protocol } from "puppeteer-core";

/** One JPEG frame of a tab, as Chromium's screencast sends it. */
export interface ScreencastFrame {
  /** Base64 JPEG. */
  data: string;
  /** Size of the page's viewport in CSS pixels when the frame was taken (for mapping clicks back). */
  width: number;
  height: number;
  /** Seconds since the epoch, Chromium's time of the frame. */
  timestamp: number;
}

export interface ScreencastSettings {
  quality?: number;
  maxWidth?: number;
  maxHeight?: number;
  /** Send every n-th frame (Chromium's everyNthFrame). */
  everyNthFrame?: number;
  /** At most one frame per this many ms: each ack waits until then (Chromium encodes no frame before it); default 0. */
  minFrameIntervalMs?: number;
}

/**
 * The live picture of one tab: Chromium's Page.startScreencast on a CDP session, every frame acknowledged
 * (Chromium sends the next only after the ack) and handed to one listener. The one screencast primitive of the
 * project: the crawl's live view and the interactive login-profile page both stream through it.
 */
export class CdpScreencast {
  private stopped = false;
  private minFrameIntervalMs = 0;
  private lastAckAt = 0;
  private readonly onFrame = (event: Protocol.Page.ScreencastFrameEvent): void => {
    if (this.stopped) return;
    // Ack first: a listener that throws must not freeze the stream.
    const ack = (): void => void (this.stopped || this.cdp.send("Page.screencastFrameAck", { sessionId: event.sessionId }).catch(() => undefined));
    const wait = this.lastAckAt + this.minFrameIntervalMs - Date.now();
    this.lastAckAt = Math.max(Date.now(), this.lastAckAt + this.minFrameIntervalMs);
    if (wait > 0) setTimeout(ack, wait).unref();
    else ack();
    const { deviceWidth, deviceHeight, timestamp } = event.metadata;
    this.listener({ data: event.data, width: deviceWidth, height: deviceHeight, timestamp: timestamp ?? Date.now() / 1000 });
  };

  private constructor(
    private readonly cdp: CDPSession,
    private readonly listener: (frame: ScreencastFrame) => void,
  ) {}

  /** Start streaming `cdp`'s tab to `listener` until stop() (or the session ends). */
  static async start(cdp: CDPSession, listener: (frame: ScreencastFrame) => void, settings: ScreencastSettings = {}): Promise<CdpScreencast> {
    const cast = new CdpScreencast(cdp, listener);
    cast.minFrameIntervalMs = settings.minFrameIntervalMs ?? 0;
    cdp.on("Page.screencastFrame", cast.onFrame);
    await cdp.send("Page.startScreencast", {
      format: "jpeg",
      quality: settings.quality ?? 60,
      maxWidth: settings.maxWidth ?? 1366,
      maxHeight: settings.maxHeight ?? 900,
      everyNthFrame: settings.everyNthFrame ?? 1,
    });
    return cast;
  }

  /** Stop the stream; a session already gone counts as stopped. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.cdp.off("Page.screencastFrame", this.onFrame);
    await this.cdp.send("Page.stopScreencast").catch(() => undefined);
  }
}
