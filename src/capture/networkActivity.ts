import type { CDPSession, Protocol } from "puppeteer-core";
import { logger } from "../log/logger.js";
import { madeByPage } from "../util/requestInitiators.js";
import type { DocumentLifetimes } from "./documentLifetimes.js";

/** A request in flight: what it asked for, and whose it is. */
interface InFlight {
  url: string;
  frameId: string | undefined;
  /** The loader of the document that made it (a document request: the loader it creates). */
  loaderId: string;
}

/**
 * A tab's requests in flight, as the network-idle wait counts them. A long-lived stream (an
 * EventSource, a script's streaming fetch) counts as quiet once it has sent its first bytes, as browsers' own
 * idle heuristics do: otherwise a page with a live ticker never goes quiet. (Its body is still read
 * after that; the capture's drain decides when an open stream is cut.) Only the page's own documents' requests
 * count: those of a document that is gone (the previous page's unload beacons, a frame taken down) never get
 * an end the tab reports, and would hold every wait to its cap.
 */
export class NetworkActivity {
  private readonly inFlight = new Map<string, InFlight>();
  private lastActivity = Date.now();
  /** When the page last started a request (epoch ms). */
  private lastStart = 0;
  private readonly listeners = new Set<() => void>();

  constructor(cdp: CDPSession, lifetimes: DocumentLifetimes) {
    // blob: and data: never go over the network, and a media element's MediaSource blob: never "finishes":
    // counted, every page with an MSE player (HLS, DASH) waited out the whole idle cap, twice.
    cdp.on("Network.requestWillBeSent", (event: Protocol.Network.RequestWillBeSentEvent) => {
      if (!/^https?:/i.test(event.request.url)) return;
      // A gone document's request (the previous page's unload beacons): no end of it will ever be reported here.
      if (lifetimes.documentGone(event.frameId, event.loaderId)) return;
      // The behaviors' own fetches and the browser's (the tab's icon, the manifest) load nothing into the page:
      // captured, but the page is quiet without them.
      if (!madeByPage(event.type ?? "", event.initiator)) return;
      this.started(event.requestId, { url: event.request.url, frameId: event.frameId, loaderId: event.loaderId });
    });
    lifetimes.onGone(() => this.forget((request) => lifetimes.documentGone(request.frameId, request.loaderId)));
    cdp.on("Network.loadingFinished", (event: Protocol.Network.LoadingFinishedEvent) => this.ended(event.requestId));
    cdp.on("Network.loadingFailed", (event: Protocol.Network.LoadingFailedEvent) => this.ended(event.requestId));
  }

  /** Forget requests of an earlier page (a navigation ends them, but not always with an event). */
  reset(): void {
    this.inFlight.clear();
    this.touch();
  }

  /** A request now streaming its body to us: quiet from here on. */
  streaming(requestId: string): void {
    if (this.inFlight.delete(requestId)) this.touch();
  }

  /** The page started a request at or after `time` (epoch ms). */
  startedSince(time: number): boolean {
    return this.lastStart >= time;
  }

  /** No request in flight (streams aside), and none started or ended in the last `ms`. */
  quietFor(ms: number): boolean {
    return this.inFlight.size === 0 && Date.now() - this.lastActivity >= ms;
  }

  private touch(): void {
    this.lastActivity = Date.now();
    for (const listener of this.listeners) listener();
  }

  /** Requests that will never end as far as this tab is told: their document is gone. */
  private forget(gone: (request: InFlight) => boolean): void {
    let forgot = false;
    for (const [requestId, request] of this.inFlight) {
      if (gone(request)) forgot = this.inFlight.delete(requestId) || forgot;
    }
    if (forgot) this.touch();
  }

  private started(requestId: string, request: InFlight): void {
    this.inFlight.set(requestId, request);
    this.lastStart = Date.now();
    this.touch();
  }

  private ended(requestId: string): void {
    if (this.inFlight.delete(requestId)) this.touch();
  }

  /**
   * Wait until at most `maxInFlight` requests have been in flight (streams that started aside) for
   * `idleMs`, up to `capMs`: script-loaded content is captured without a fixed sleep on every page.
   * (puppeteer's waitForNetworkIdle, as browsertrix-crawler's --netIdleMaxRequests uses it.)
   */
  async waitForQuiet(capMs: number, maxInFlight = 0, idleMs = 500): Promise<void> {
    if (capMs <= 0) return;
    const deadline = Date.now() + capMs;
    await new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        clearTimeout(timer);
        const now = Date.now();
        if (now >= deadline) {
          // Said once per wait that ran out: which requests kept the page from being quiet.
          logger.debug("capture", "network not quiet when the idle wait ran out", { capMs, inFlight: this.inFlight.size, urls: [...this.inFlight.values()].slice(0, 5).map((request) => request.url) });
          return done();
        }
        const quiet = this.inFlight.size <= maxInFlight;
        if (quiet && now - this.lastActivity >= idleMs) return done();
        const wait = quiet ? idleMs - (now - this.lastActivity) : deadline - now;
        timer = setTimeout(check, Math.max(1, Math.min(wait, deadline - now)));
      };
      const done = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
        resolve();
      };
      this.listeners.add(check);
      check();
    });
  }
}
