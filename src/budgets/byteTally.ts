import type { Exchange, ExchangeBody, WebSocketCapture } from "../archive/exchange.js";
import type { ExchangeSink, StoreOutcome } from "../pipeline/exchangeSink.js";

/**
 * A sink counting the WARC bytes (gzip members as written) of the records stored through it, which a seed's
 * size budget is charged (reports/seeds.jsonl). A worker has one (`ByteTallySink`, for what is not any one
 * page's: a service worker's captures, counted for the page current when they are written) and each page
 * attempt one of its own (`forPage`), which the page's capture stores through: its exchanges, the files
 * fetched for it outside the browser, its WebSockets. What that page sink stores after the page was settled
 * (a stream's files or a socket's records still being written past the page's drain deadline) is still that
 * page's: handed to the `late` callback `take` was given, never to the next page. Exchanges stored by another
 * page first count there.
 */
export class ByteTallySink implements ExchangeSink {
  /** Bytes counted since the last `take`. */
  private bytes = 0;
  /** Set by `take`: where bytes counted from then on go. */
  private late: ((bytes: number) => void) | null = null;

  constructor(
    private readonly sink: ExchangeSink,
    /** A page sink's worker sink: what it counted meanwhile is the page's too. */
    private readonly worker: ByteTallySink | null = null,
  ) {}

  /** A new page attempt's own sink; the worker's count starts again from zero with it. */
  forPage(): ByteTallySink {
    this.bytes = 0;
    this.late = null;
    return new ByteTallySink(this.sink, this);
  }

  /**
   * The bytes counted since the last take (with a page sink's, its worker's meanwhile), counting from zero
   * again; with `late`, what is counted from now on goes there as it comes (the page's seed, charged at once).
   */
  take(late?: (bytes: number) => void): number {
    const bytes = this.bytes + (this.worker?.take() ?? 0);
    this.bytes = 0;
    this.late = late ?? null;
    return bytes;
  }

  /** Count records written outside the sink for the current page (its text and screenshots). */
  add(bytes: number): void {
    if (bytes <= 0) return;
    if (this.late) this.late(bytes);
    else this.bytes += bytes;
  }

  async store(exchange: Exchange): Promise<StoreOutcome> {
    const outcome = await this.sink.store(exchange);
    if (outcome.kind !== "skipped") this.add(outcome.record.length + outcome.request.length);
    return outcome;
  }

  hasStoredResponse(url: string): Promise<boolean> {
    return this.sink.hasStoredResponse(url);
  }

  storedFinalStatus(url: string): Promise<number | null> {
    return this.sink.storedFinalStatus(url);
  }

  canListPageIn(wacz: string): Promise<boolean> {
    return this.sink.canListPageIn(wacz);
  }

  isArchivedPayload(body: ExchangeBody, status: number): Promise<boolean> {
    return this.sink.isArchivedPayload(body, status);
  }

  async storeWebSocket(socket: WebSocketCapture): Promise<number> {
    const bytes = await this.sink.storeWebSocket(socket);
    this.add(bytes);
    return bytes;
  }
}
