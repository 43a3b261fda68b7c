import type { CDPSession, Protocol } from "puppeteer-core";
import { REPLAY_PREFIX } from "../replay/replayServer.js";

/** What the replayed page asked for, by archived URL: the last answer the replay gave for it. */
export interface ReplayRequest {
  url: string;
  /** HTTP status the replay answered; 0 when the request failed without an answer. */
  status: number;
  /** Chromium's resource type: Document, Stylesheet, Image, Script, Fetch... */
  type: string;
  /** Chromium's error text when it failed without an answer. */
  error?: string;
}

/**
 * Parse a replay URL, /replay/w/<collection>[/:<hash>]/<timestamp><modifier>/<archived URL>, into its
 * collection and archived URL; null for the replay's own requests (its API, wombat.js, the UI).
 */
export function archivedUrlOf(replayUrl: string): { collection: string; timestamp: string; url: string; prefix: string } | null {
  const at = replayUrl.indexOf(REPLAY_PREFIX);
  if (at < 0) return null;
  const match = /^(([^/]+)(?:\/:[0-9a-f]+)?\/)(\d*)(?:[a-z]{2}_)?\/((?:https?|urn):.*)$/s.exec(replayUrl.slice(at + REPLAY_PREFIX.length));
  if (!match) return null;
  const [, collectionPath, collection, timestamp, url] = match;
  // What comes before the timestamp: the same collection shows another capture at `${prefix}<ts>mp_/<url>`.
  return { collection, timestamp, url, prefix: replayUrl.slice(0, at + REPLAY_PREFIX.length) + collectionPath };
}

interface Pending {
  url: string;
  frameId: string;
  type: string;
}

/**
 * Records the replayed page's traffic through the tab's DevTools session: every request of the frames the
 * replayed page is in (not ReplayWeb.page's own: its favicon lookups and API calls come from its frame),
 * with the answer the service worker gave. Knows when that traffic has gone quiet.
 */
export class ReplayTraffic {
  private readonly pending = new Map<string, Pending>();
  private readonly answered = new Map<string, ReplayRequest & { frameId: string }>();
  private lastActivity = Date.now();

  constructor(private readonly cdp: CDPSession) {
    cdp.on("Network.requestWillBeSent", this.onRequest);
    cdp.on("Network.responseReceived", this.onResponse);
    cdp.on("Network.loadingFinished", this.onDone);
    cdp.on("Network.loadingFailed", this.onFailed);
  }

  /** Forget what was seen: a new page starts. */
  reset(): void {
    this.pending.clear();
    this.answered.clear();
    this.lastActivity = Date.now();
  }

  dispose(): void {
    this.cdp.off("Network.requestWillBeSent", this.onRequest);
    this.cdp.off("Network.responseReceived", this.onResponse);
    this.cdp.off("Network.loadingFinished", this.onDone);
    this.cdp.off("Network.loadingFailed", this.onFailed);
  }

  /** Requests of replayed archived URLs still waiting for their answer. */
  inFlight(): number {
    return this.pending.size;
  }

  /** Milliseconds since a request of the replayed page started or ended. */
  quietFor(): number {
    return Date.now() - this.lastActivity;
  }

  /** The answers to the replayed page's requests, for the frames given (the replayed page and its subframes). */
  requests(frameIds: ReadonlySet<string>): ReplayRequest[] {
    return [...this.answered.values()].filter((r) => frameIds.has(r.frameId)).map(({ frameId: _, ...request }) => request);
  }

  private readonly onRequest = (event: Protocol.Network.RequestWillBeSentEvent): void => {
    const archived = archivedUrlOf(event.request.url);
    if (!archived || archived.url.startsWith("urn:")) return;
    // A redirect ends one request and starts the next under the same id.
    if (event.redirectResponse) this.answer(event.requestId, event.redirectResponse.status);
    this.pending.set(event.requestId, { url: archived.url, frameId: event.frameId ?? "", type: event.type ?? "Other" });
    this.lastActivity = Date.now();
  };

  private readonly onResponse = (event: Protocol.Network.ResponseReceivedEvent): void => {
    const request = this.pending.get(event.requestId);
    if (request) this.answered.set(request.url, { url: request.url, status: event.response.status, type: event.type, frameId: request.frameId });
  };

  private readonly onDone = (event: Protocol.Network.LoadingFinishedEvent): void => {
    if (this.pending.delete(event.requestId)) this.lastActivity = Date.now();
  };

  private readonly onFailed = (event: Protocol.Network.LoadingFailedEvent): void => {
    const request = this.pending.get(event.requestId);
    if (!request) return;
    this.pending.delete(event.requestId);
    this.lastActivity = Date.now();
    // An answer already seen stands (an image whose decoding was cancelled); a request never answered failed.
    if (!this.answered.has(request.url)) this.answered.set(request.url, { url: request.url, status: 0, type: request.type, frameId: request.frameId, error: event.errorText });
  };

  private answer(requestId: string, status: number): void {
    const request = this.pending.get(requestId);
    if (request) this.answered.set(request.url, { url: request.url, status, type: request.type, frameId: request.frameId });
  }
}
