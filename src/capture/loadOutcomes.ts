import type { CDPSession, Protocol } from "puppeteer-core";
import type { DocumentLifetimes } from "./documentLifetimes.js";
import { ResponseProtocols } from "./responseProtocols.js";

/** How long to wait for the browser to report a continued response's load as finished or failed. */
const LOAD_OUTCOME_WAIT_MS = 10_000;
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
  private readonly waiters = new Map<string, { frameId: string | undefined; settle: (error: string | null) => void }>();
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
  }

  settle(networkId: string, error: string | null): void {
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
   * fetch of the browser's own, `networkId` null), else the error.
   */
  of(networkId: string | null, frameId?: string): Promise<string | null> {
    if (networkId === null || this.lifetimes.requestGone(networkId, frameId)) return Promise.resolve(null);
    if (this.outcomes.has(networkId)) {
      const error = this.outcomes.get(networkId)!;
      this.outcomes.delete(networkId);
      return Promise.resolve(error);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(networkId);
        resolve(null);
      }, LOAD_OUTCOME_WAIT_MS);
      this.waiters.set(networkId, {
        frameId,
        settle: (error) => {
          clearTimeout(timer);
          resolve(error);
        },
      });
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
