import type { Exchange, ExchangeBody, WebSocketCapture } from "../archive/exchange.js";
import type { ExchangeSink, StoreOutcome } from "../pipeline/exchangeSink.js";

/**
 * One worker's sink, counting the WARC bytes (gzip members as written) of the records stored through it:
 * a worker loads one page at a time, so what it counts between two pages is that page's (a seed's size
 * budget, reports/seeds.jsonl). Exchanges stored by another page first count there; WebSocket records
 * are not counted (their sizes are not handed back).
 */
export class ByteTallySink implements ExchangeSink {
  /** Bytes counted since the last `take`. */
  private bytes = 0;

  constructor(private readonly sink: ExchangeSink) {}

  /** The bytes counted since the last take, counting from zero again. */
  take(): number {
    const bytes = this.bytes;
    this.bytes = 0;
    return bytes;
  }

  /** Count records written outside the sink for the current page (its text and screenshots). */
  add(bytes: number): void {
    this.bytes += bytes;
  }

  async store(exchange: Exchange): Promise<StoreOutcome> {
    const outcome = await this.sink.store(exchange);
    if (outcome.kind !== "skipped") this.bytes += outcome.record.length + outcome.request.length;
    return outcome;
  }

  hasStoredResponse(url: string): Promise<boolean> {
    return this.sink.hasStoredResponse(url);
  }

  isArchivedPayload(body: ExchangeBody, status: number): Promise<boolean> {
    return this.sink.isArchivedPayload(body, status);
  }

  storeWebSocket(socket: WebSocketCapture): Promise<void> {
    return this.sink.storeWebSocket(socket);
  }
}
