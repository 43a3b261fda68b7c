import type { HTTPRequest, Page } from "puppeteer-core";

/** A request in flight longer than this is a stream or long poll, not a batch being loaded. */
const STREAM_MS = 5000;

/**
 * Whether a tab's network has been quiet for a while, as the autoscroll behavior asks between its polls:
 * a feed is done growing only once no request it started is still on its way. Read from puppeteer's own
 * request events, so it needs nothing from the page's capture; attached once per tab, so it knows the
 * requests a page started before its behaviors did.
 */
export class RequestWatch {
  private readonly inFlight = new Map<HTTPRequest, number>();
  private lastActivity = Date.now();
  private lastStart = 0;
  private readonly onStart = (request: HTTPRequest) => {
    // Streams never end: an EventSource would keep the feed "loading" until the timeout.
    if (request.resourceType() === "eventsource") return;
    if (this.inFlight.size >= 500) this.forgetStreams(Date.now());
    this.inFlight.set(request, Date.now());
    this.lastActivity = this.lastStart = Date.now();
  };
  private readonly onEnd = (request: HTTPRequest) => {
    if (this.inFlight.delete(request)) this.lastActivity = Date.now();
  };

  private constructor() {}

  /** Watch the tab for the rest of its life (its listeners go with it). */
  static attach(tab: Page): RequestWatch {
    const watch = new RequestWatch();
    tab.on("request", watch.onStart);
    tab.on("requestfinished", watch.onEnd);
    tab.on("requestfailed", watch.onEnd);
    return watch;
  }

  /**
   * No request started or ended in the last `ms`, and none is in flight. A request older than `streamMs`
   * counts as a stream (a long poll, a media download) rather than as something the feed waits for.
   */
  quietFor(ms: number, streamMs = STREAM_MS): boolean {
    const now = Date.now();
    for (const started of this.inFlight.values()) if (now - started < streamMs) return false;
    return now - this.lastActivity >= ms;
  }

  /**
   * A request started at or after `since` (epoch ms, as the events reached us: a request the page started
   * a moment before counts too), or one is in flight (streams aside, as above).
   */
  activeSince(since: number, streamMs = STREAM_MS): boolean {
    const now = Date.now();
    for (const started of this.inFlight.values()) if (now - started < streamMs) return true;
    return this.lastStart >= since;
  }

  /** Requests that never reported an end (a page left mid-request) are not kept for the tab's life. */
  private forgetStreams(now: number): void {
    for (const [request, started] of this.inFlight) if (now - started >= STREAM_MS) this.inFlight.delete(request);
  }
}
