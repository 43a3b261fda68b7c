import type { CDPSession, Protocol } from "puppeteer-core";

/** Requests, removed frames and replaced documents remembered (each page adds a few hundred at most). */
const MAX_REMEMBERED = 5000;

/**
 * Which document each request of a tab belongs to, and which documents are gone: a frame taken down (an ad slot
 * removed) or the main frame's document replaced (the previous page's, once the next one commits). Chromium
 * reports no end for a request of a gone document, neither its load nor its leaving the browser, so whatever
 * waits for one (the network-idle wait, a load's outcome, a page's end) asks here instead, in one way.
 */
export class DocumentLifetimes {
  /** Network id -> the frame and the document loader that made the request. */
  private readonly requests = new Map<string, { frameId: string | undefined; loaderId: string }>();
  private readonly removedFrames = new Set<string>();
  private readonly replacedLoaders = new Set<string>();
  /**
   * The last document whose page ended while it still showed, with its frames: its scripts are let run again for the
   * next page, before that page replaces it.
   */
  private ended: { loaderId: string; frames: Set<string> } | null = null;
  /** Requests paused before the browser told whose they are, by network id: told at once when it does. */
  private readonly awaited = new Map<string, () => void>();
  /** The frames in the main frame's current document (an iframe's, a frame's in that...): they go with it. */
  private readonly subframes = new Set<string>();
  private mainLoader: string | null = null;
  private readonly listeners = new Set<() => void>();

  /** Hear the tab's requests and its frames' comings and goings (the Page domain must be on). */
  listen(cdp: CDPSession): void {
    cdp.on("Network.requestWillBeSent", (event: Protocol.Network.RequestWillBeSentEvent) => {
      remember(this.requests, event.requestId, { frameId: event.frameId, loaderId: event.loaderId });
      this.awaited.get(event.requestId)?.();
    });
    cdp.on("Page.frameAttached", (event: Protocol.Page.FrameAttachedEvent) => remember(this.subframes, event.frameId));
    cdp.on("Page.frameNavigated", (event: Protocol.Page.FrameNavigatedEvent) => {
      if (event.frame.parentId) return remember(this.subframes, event.frame.id);
      if (event.frame.loaderId === this.mainLoader) return;
      const replaced = this.mainLoader;
      this.mainLoader = event.frame.loaderId;
      this.ended = null; // replaced: it asks for nothing more
      if (replaced === null) return;
      // The document and every frame in it: Chromium tells no frame's detachment when their page is replaced.
      remember(this.replacedLoaders, replaced);
      for (const frame of this.subframes) remember(this.removedFrames, frame);
      this.subframes.clear();
      this.changed();
    });
    cdp.on("Page.frameDetached", (event: Protocol.Page.FrameDetachedEvent) => {
      if (event.reason === "swap") return; // the same frame, in another process
      remember(this.removedFrames, event.frameId);
      this.changed();
    });
  }

  /**
   * Whether the request `networkId` (of `frameId`, when its own record is not known) belongs to a document that is
   * gone. A document request belongs to the document it loads, never gone by its predecessor's replacement.
   */
  requestGone(networkId: string, frameId?: string): boolean {
    const request = this.requests.get(networkId);
    const frame = request?.frameId ?? frameId;
    if (frame !== undefined && this.removedFrames.has(frame)) return true;
    return request !== undefined && this.replacedLoaders.has(request.loaderId);
  }

  /**
   * The main frame's document is done: its page ended. It may show a moment longer (the next page replaces it
   * in place, its scripts let run again first), and anything it asks for then belongs to no page.
   */
  endDocument(): void {
    this.ended = this.mainLoader === null ? null : { loaderId: this.mainLoader, frames: new Set(this.subframes) };
  }

  /**
   * Whether the request `networkId` was made by the ended document or a frame in it, while that document still shows.
   * Chromium may pause a request before it tells whose it is: then that is awaited, for `waitMs` at most.
   */
  async madeByEndedDocument(networkId: string, waitMs: number): Promise<boolean> {
    if (!this.ended) return false;
    if (!this.requests.has(networkId) && !this.awaited.has(networkId)) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(told, waitMs);
        function told() {
          clearTimeout(timer);
          resolve();
        }
        this.awaited.set(networkId, told);
      }).finally(() => this.awaited.delete(networkId));
    }
    const request = this.requests.get(networkId);
    const ended = this.ended;
    if (!request || !ended) return false;
    return request.loaderId === ended.loaderId || (request.frameId !== undefined && ended.frames.has(request.frameId));
  }

  /** Whether a request made by `loaderId`'s document in `frameId` is one of a gone document's. */
  documentGone(frameId: string | undefined, loaderId: string): boolean {
    return (frameId !== undefined && this.removedFrames.has(frameId)) || this.replacedLoaders.has(loaderId);
  }

  /** Call `listener` whenever a document goes: its waits check their requests again. */
  onGone(listener: () => void): void {
    this.listeners.add(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

function remember<K, V>(into: Map<K, V> | Set<K>, key: K, value?: V): void {
  if (into instanceof Map) into.set(key, value as V);
  else into.add(key);
  if (into.size > MAX_REMEMBERED) into.delete(into.keys().next().value as K);
}
