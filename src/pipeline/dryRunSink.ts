import type { Exchange } from "../archive/exchange.js";
import { discardBody } from "../fetch/fallbackFetcher.js";
import type { ExchangeSink, StoreOutcome } from "./exchangeSink.js";

/**
 * --dryRun: pages are loaded, listed and followed as in any crawl, but what they fetch is dropped: no
 * WARC record, no index entry, no capture history (browsertrix-crawler: "no archive data written").
 */
export class DiscardingSink implements ExchangeSink {
  async store(exchange: Exchange): Promise<StoreOutcome> {
    await discardBody(exchange);
    return { kind: "skipped", reason: "dry-run", wacz: null };
  }

  async hasStoredResponse(): Promise<boolean> {
    return false;
  }

  async storedFinalStatus(): Promise<number | null> {
    return null;
  }

  /** Nothing is written: no WACZ to list a page in. */
  async canListPageIn(): Promise<boolean> {
    return false;
  }

  /** --dryRun writes no archive data: the socket's frames are dropped too. */
  async storeWebSocket(): Promise<number> {
    return 0;
  }

  /** Nothing is written, so no page is a duplicate of anything written. */
  async isArchivedPayload(): Promise<boolean> {
    return false;
  }
}
