import type { Exchange, ExchangeBody, WebSocketCapture } from "../archive/exchange.js";
import type { WrittenRecord } from "../archive/warcWriter.js";

/**
 * What became of an exchange; `wacz`: the WACZ holding its records, when known; `path`: the WARC file the records were
 * written into, as this process reaches it (a retry of the page reads its response back from there).
 */
export type StoreOutcome =
  | { kind: "response" | "revisit"; record: WrittenRecord; request: WrittenRecord; wacz: string; path: string }
  | { kind: "skipped"; reason: "already-stored" | "partial-content" | "browser-revalidation" | "dry-run"; wacz: string | null };

/**
 * Where captured exchanges go: the one way an HTTP exchange enters the archive, whether the browser's
 * capture (capture/pageCapture.ts) or a fetch outside the browser (fetch/fallbackFetcher.ts) produced it.
 * Implemented by CapturePipeline (capturePipeline.ts).
 */
export interface ExchangeSink {
  /**
   * Store one exchange: resolves once its records are in the WARC (or it was skipped), rejects when they
   * could not be written. The sink takes over the exchange's body file, if it has one.
   */
  store(exchange: Exchange): Promise<StoreOutcome>;
  /** Whether this crawl holds the URL's full (200) response to a GET already. */
  hasStoredResponse(url: string): Promise<boolean>;
  /**
   * The status of an answer to a GET of the URL this crawl holds that fetching it again would not change: 200, or a
   * 404 or 410 (a requisite a site names on every page but does not have); null when it holds none of them.
   */
  storedFinalStatus(url: string): Promise<number | null>;
  /** Whether a page may still be listed in this WACZ: one this process packages and has not sealed. */
  canListPageIn(wacz: string): Promise<boolean>;
  /** Whether a payload of this status would be written as a revisit of an archived original (--dedupePagesMinDepth). */
  isArchivedPayload(body: ExchangeBody, status: number): Promise<boolean>;
  /**
   * Store a WebSocket's records (its frames and its handshake: archive/records.ts webSocketRecords), written
   * whole or not at all; no claim, no dedupe, no index note: a socket's frames are no payload a later capture shares.
   * Resolves with the WARC bytes written (gzip members), which its page's seed is charged.
   */
  storeWebSocket(socket: WebSocketCapture): Promise<number>;
}
