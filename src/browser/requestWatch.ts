import type { HTTPRequest, Page } from "puppeteer-core";

/**
 * Whether a tab's network has been quiet for a while, as the autoscroll behavior asks between its polls:
 * a feed is done growing only once no request it started is still on its way. Read from puppeteer's own
 * request events, so it needs nothing from the page's capture.
 */
export class RequestWatch {
  private readonly inFlight = new Map<HTTPRequest, number>();
  private lastActivity = Date.now();
  private readonly onStart = (request: HTTPRequest) => {
    // Streams never end: an EventSource would keep the feed "loading" until the timeout.
    if (request.resourceType() === "eventsource") return;
    this.inFlight.set(request, Date.now());
    this.lastActivity = Date.now();
  };
  private readonly onEnd = (request: HTTPRequest) => {
    if (this.inFlight.delete(request)) this.lastActivity = Date.now();
  };

  private constructor(private readonly tab: Page) {}

  static attach(tab: Page): RequestWatch {
    const watch = new RequestWatch(tab);
    tab.on("request", watch.onStart);
    tab.on("requestfinished", watch.onEnd);
    tab.on("requestfailed", watch.onEnd);
    return watch;
  }

  detach(): void {
    this.tab.off("request", this.onStart);
    this.tab.off("requestfinished", this.onEnd);
    this.tab.off("requestfailed", this.onEnd);
  }

  /**
   * No request started or ended in the last `ms`, and none is in flight. A request older than `streamMs`
   * counts as a stream (a long poll, a media download) rather than as something the feed waits for.
   */
  quietFor(ms: number, streamMs: number): boolean {
    const now = Date.now();
    for (const started of this.inFlight.values()) if (now - started < streamMs) return false;
    return now - this.lastActivity >= ms;
  }
}
