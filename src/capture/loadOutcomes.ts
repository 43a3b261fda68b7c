import type { CDPSession, Protocol } from "puppeteer-core";
import type { DocumentLifetimes } from "./documentLifetimes.js";
import { ResponseProtocols } from "./responseProtocols.js";

/** How long to wait for the browser to report a continued response's load as finished or failed. */
const LOAD_OUTCOME_WAIT_MS = 10_000;
/**
 * Once the page has received every byte of the body the capture read, how long its load's failure still has to be
 * told: the browser had the load's end before the body was read, and tells a failure right after the bytes; only a
 * body the page holds unread (a script's fetch whose response it never reads) has its end told late, or never.
 */
export const AFTER_BODY_RECEIVED_WAIT_MS = 1000;
/**
 * The same for a body whole by its declared length: no failure can cut it any more, so the wait only lets the page's
 * script take the bytes it now holds before the page's end is decided.
 */
export const AFTER_WHOLE_BODY_RECEIVED_WAIT_MS = 100;
/** Outcomes nobody asks for (requests the capture did not pause on) must not pile up. */
const MAX_UNCLAIMED = 2000;

/**
 * How each network request of a tab ended (Network.loadingFinished / loadingFailed), kept until the
 * capture asks: a body the browser handed over may still turn out cut off once the load fails. And what
 * each response came over (responseProtocols.ts).
 */
export class LoadOutcomes {
  /** null: finished, else the browser's error text. */
  private readonly outcomes = new Map<string, string | null>();
  private readonly waiters = new Map<string, Waiter>();
  /** Bytes each load in progress has given the page so far: a body handed over before anyone asks is counted too. */
  private readonly received = new Map<string, number>();
  /** What each response came over (h2, tls/1.3...): WARC-Protocol. */
  readonly protocols = new ResponseProtocols();

  /**
   * @param lifetimes the tab's documents: a load of a document that is gone (a frame taken down, the previous
   *   page's document replaced) ends no other way.
   */
  constructor(private readonly lifetimes: DocumentLifetimes) {
    lifetimes.onGone(() => this.documentsGone());
  }

  /** Hear the tab's load outcomes and its responses' protocols. */
  listen(cdp: CDPSession): void {
    this.protocols.listen(cdp);
    cdp.on("Network.loadingFinished", (event: Protocol.Network.LoadingFinishedEvent) => this.settle(event.requestId, null));
    cdp.on("Network.loadingFailed", (event: Protocol.Network.LoadingFailedEvent) => this.settle(event.requestId, event.errorText));
    cdp.on("Network.dataReceived", (event: Protocol.Network.DataReceivedEvent) => this.receive(event.requestId, event.dataLength));
  }

  private receive(networkId: string, bytes: number): void {
    this.received.set(networkId, (this.received.get(networkId) ?? 0) + bytes);
    if (this.received.size > MAX_UNCLAIMED) this.received.delete(this.received.keys().next().value!);
    this.waiters.get(networkId)?.received(bytes);
  }

  settle(networkId: string, error: string | null): void {
    this.received.delete(networkId);
    const waiter = this.waiters.get(networkId);
    if (waiter) {
      this.waiters.delete(networkId);
      waiter.settle(error);
      return;
    }
    this.outcomes.set(networkId, error);
    if (this.outcomes.size > MAX_UNCLAIMED) this.outcomes.delete(this.outcomes.keys().next().value!);
  }

  /**
   * How the browser's load of a request ended: null when it finished (or did not say in time, or never will: a
   * fetch of the browser's own, `networkId` null), else the error. Asked with the body the capture read from the
   * paused response (`read`), before or after that body went on to the page: once the page has received all of it,
   * a failure is told at once or the page holds the body unread (a script's fetch it never reads: its end is told
   * late or never). Until then the page is still getting it, and its end must wait: whatever the script does with
   * the body (a title, an image it adds) is part of the page.
   */
  of(networkId: string | null, frameId?: string, read?: BodyRead): Promise<string | null> {
    if (networkId === null || this.lifetimes.requestGone(networkId, frameId)) return Promise.resolve(null);
    if (this.outcomes.has(networkId)) {
      const error = this.outcomes.get(networkId)!;
      this.outcomes.delete(networkId);
      return Promise.resolve(error);
    }
    return new Promise((resolve) => {
      let received = this.received.get(networkId) ?? 0;
      let lastWait: NodeJS.Timeout | undefined;
      const end = (error: string | null) => {
        clearTimeout(timer);
        clearTimeout(lastWait);
        this.waiters.delete(networkId);
        resolve(error);
      };
      const timer = setTimeout(() => end(null), LOAD_OUTCOME_WAIT_MS);
      const waiter: Waiter = {
        frameId,
        settle: end,
        received: (bytes) => {
          received += bytes;
          if (read && lastWait === undefined && received >= read.size) lastWait = setTimeout(() => end(null), read.whole ? AFTER_WHOLE_BODY_RECEIVED_WAIT_MS : AFTER_BODY_RECEIVED_WAIT_MS);
        },
      };
      this.waiters.set(networkId, waiter);
      waiter.received(0); // an empty body, or one received already: nothing more is to arrive
    });
  }

  /**
   * A document went (an ad slot's frame removed, the previous page's document replaced) while its loads ran:
   * Chromium reports neither end for them. What the browser handed over is what it had received; waiting for an
   * end that never comes would hold the page's end.
   */
  private documentsGone(): void {
    for (const [networkId, waiter] of this.waiters) {
      if (!this.lifetimes.requestGone(networkId, waiter.frameId)) continue;
      this.waiters.delete(networkId);
      waiter.settle(null);
    }
  }
}

/** The body the capture read from a paused response, before letting it on to the page. */
export interface BodyRead {
  /** Its size as the page receives it (decoded), which Network.dataReceived counts. */
  size: number;
  /** It has every byte its Content-Length declared: not cut off, however its load ends. */
  whole: boolean;
}

interface Waiter {
  frameId: string | undefined;
  settle(error: string | null): void;
  /** `bytes` more of the body reached the page. */
  received(bytes: number): void;
}
