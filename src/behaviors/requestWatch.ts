import type { HTTPRequest, Page } from "puppeteer-core";
import { madeByPage } from "../util/requestInitiators.js";

/** A request in flight longer than this is a stream or long poll, not a batch being loaded. */
const STREAM_MS = 5000;
/** An answered request whose end is not reported counts as in flight this long after its answer. */
const ANSWERED_MS = 1000;
/** Paths whose last request is older than this are forgotten (once many are known): no wait looks further back. */
const FORGET_MS = 15_000;

/** The path a request is known by, here and in the page's own watch (autoscrollTimers.ts): origin + path. */
export function requestKey(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.origin + parsed.pathname;
  } catch {
    return url;
  }
}

/** Paths whose requests a wait does not count (the page's background traffic: polls, beacons). */
export type IgnoredPaths = ReadonlySet<string>;
const NONE: IgnoredPaths = new Set();

/**
 * Whether a tab's network has been quiet for a while, as the autoscroll behavior asks between its polls:
 * a feed is done growing only once no request it started is still on its way. Read from puppeteer's own
 * request events, so it needs nothing from the page's capture; attached once per tab, so it knows the
 * requests a page started before its behaviors did. Kept per path, so that a wait can leave out the
 * paths a page keeps polling by itself.
 */
export class RequestWatch {
  private readonly inFlight = new Map<HTTPRequest, { started: number; key: string; answered?: number }>();
  /** Per path: when a request of it last started, and when one last started or ended. */
  private readonly recent = new Map<string, { start: number; activity: number }>();
  private readonly onStart = (request: HTTPRequest) => {
    // Streams never end: an EventSource would keep the feed "loading" until the timeout.
    if (request.resourceType() === "eventsource") return;
    // The behaviors' own fetches (autofetch) and the browser's (the tab's icon) are no growth of the page, nor
    // its reaction to a move.
    if (!madeByPage(request.resourceType(), request.initiator())) return;
    // A new document of the tab: what the last page left in flight (its end refuses requests, not always
    // with an event) is not this one's. (A pushState or hash change makes no request: nothing is forgotten.)
    if (request.isNavigationRequest() && request.frame() === this.tab.mainFrame()) this.forgetAll();
    const now = Date.now();
    if (this.inFlight.size >= 500) this.forgetStreams(now);
    if (this.recent.size >= 1000) this.forgetOld(now);
    const key = requestKey(request.url());
    this.inFlight.set(request, { started: now, key });
    this.recent.set(key, { start: now, activity: now });
  };
  private readonly onEnd = (request: HTTPRequest) => {
    const entry = this.inFlight.get(request);
    if (!entry) return;
    this.inFlight.delete(request);
    const seen = this.recent.get(entry.key);
    if (seen) seen.activity = Date.now();
    else this.recent.set(entry.key, { start: entry.started, activity: Date.now() });
  };

  /**
   * Answered: its body is on its way. A body the page never reads (a poll's, a beacon's) is never reported
   * finished while the page lives, so an answered request counts as in flight only for ANSWERED_MS more.
   */
  private readonly onAnswer = (request: HTTPRequest) => {
    const entry = this.inFlight.get(request);
    if (!entry) return;
    entry.answered = Date.now();
    const seen = this.recent.get(entry.key);
    if (seen) seen.activity = entry.answered;
  };

  private constructor(private readonly tab: Page) {}

  /** Watch the tab for the rest of its life (its listeners go with it). */
  static attach(tab: Page): RequestWatch {
    const watch = new RequestWatch(tab);
    tab.on("request", watch.onStart);
    tab.on("requestfinished", watch.onEnd);
    tab.on("requestfailed", watch.onEnd);
    tab.on("response", (response) => watch.onAnswer(response.request()));
    // The main frame's new document committed: what the old one still had in flight (requests it made as it was
    // being replaced: the last page's beacons) never reports an end to this tab.
    tab.on("framenavigated", (frame) => {
      if (frame === tab.mainFrame()) watch.forgetAll();
    });
    return watch;
  }

  /**
   * No request started or ended in the last `ms`, and none is in flight, `ignore`'s paths aside. A request
   * older than `streamMs` counts as a stream (a long poll, a media download) rather than as something the
   * feed waits for.
   */
  quietFor(ms: number, ignore: IgnoredPaths = NONE, streamMs = STREAM_MS): boolean {
    const now = Date.now();
    if (this.youngInFlight(now, ignore, streamMs)) return false;
    for (const [key, { activity }] of this.recent) if (now - activity < ms && !ignore.has(key)) return false;
    return true;
  }

  /**
   * A request started at or after `since` (epoch ms, as the events reached us: a request the page started
   * a moment before counts too), or one is in flight (streams and `ignore`'s paths aside, as above).
   */
  activeSince(since: number, ignore: IgnoredPaths = NONE, streamMs = STREAM_MS): boolean {
    if (this.youngInFlight(Date.now(), ignore, streamMs)) return true;
    for (const [key, { start }] of this.recent) if (start >= since && !ignore.has(key)) return true;
    return false;
  }

  /** Whether a request of `paths` that started before `before` (epoch ms) is still unanswered (streams aside). */
  unansweredOf(paths: IgnoredPaths, before: number, streamMs = STREAM_MS): boolean {
    const now = Date.now();
    for (const entry of this.inFlight.values()) if (entry.started < before && entry.answered === undefined && now - entry.started < streamMs && paths.has(entry.key)) return true;
    return false;
  }

  private youngInFlight(now: number, ignore: IgnoredPaths, streamMs: number): boolean {
    for (const entry of this.inFlight.values()) if (this.pending(entry, now, streamMs) && !ignore.has(entry.key)) return true;
    return false;
  }

  private pending(entry: { started: number; answered?: number }, now: number, streamMs: number): boolean {
    return now - entry.started < streamMs && (entry.answered === undefined || now - entry.answered < ANSWERED_MS);
  }

  private forgetAll(): void {
    this.inFlight.clear();
    this.recent.clear();
  }

  /** Requests that never reported an end (a page left mid-request) are not kept for the tab's life. */
  private forgetStreams(now: number): void {
    for (const [request, { started }] of this.inFlight) if (now - started >= STREAM_MS) this.inFlight.delete(request);
  }

  private forgetOld(now: number): void {
    for (const [key, { activity }] of this.recent) if (now - activity >= FORGET_MS) this.recent.delete(key);
  }
}
