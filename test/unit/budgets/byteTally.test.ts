import { describe, expect, it } from "vitest";
import type { Exchange, WebSocketCapture } from "../../../src/archive/exchange.js";
import type { WrittenRecord } from "../../../src/archive/warcWriter.js";
import { ByteTallySink } from "../../../src/budgets/byteTally.js";
import type { ExchangeSink, StoreOutcome } from "../../../src/pipeline/exchangeSink.js";

/** A sink writing each exchange as a response of 1000 bytes and a request of 100, each socket as 700 bytes. */
class SizedSink implements ExchangeSink {
  async store(exchange: Exchange): Promise<StoreOutcome> {
    const record = (length: number) => ({ length, url: exchange.url }) as WrittenRecord;
    return { kind: "response", record: record(1000), request: record(100), wacz: "a.wacz", path: "/archive/a.warc.gz" };
  }
  async hasStoredResponse(): Promise<boolean> {
    return false;
  }
  async storedFinalStatus(): Promise<number | null> {
    return null;
  }
  async isArchivedPayload(): Promise<boolean> {
    return false;
  }
  async canListPageIn(): Promise<boolean> {
    return true;
  }
  async storeWebSocket(): Promise<number> {
    return 700;
  }
}

const exchange = (url: string) => ({ url }) as Exchange;
const socket = { url: "ws://127.0.0.1/s" } as WebSocketCapture;

describe("the bytes a page's records take", () => {
  it("counts a page's exchanges and its WebSockets' records, and what the worker's sink stored meanwhile", async () => {
    const worker = new ByteTallySink(new SizedSink());
    const page = worker.forPage();
    await page.store(exchange("http://127.0.0.1/a"));
    expect(await page.storeWebSocket(socket)).toBe(700);
    await worker.store(exchange("http://127.0.0.1/sw.js")); // a service worker's capture while the page is current
    page.add(50); // its text and screenshots
    expect(page.take()).toBe(1100 + 700 + 1100 + 50);
  });

  it("what a page's sink stores after the page was settled goes to its late callback, never to the next page", async () => {
    const worker = new ByteTallySink(new SizedSink());
    const first = worker.forPage();
    await first.store(exchange("http://127.0.0.1/first"));
    const late: number[] = [];
    expect(first.take((bytes) => late.push(bytes))).toBe(1100);
    const second = worker.forPage();
    // The first page's stream file and socket, written while the second page loads.
    await first.store(exchange("http://127.0.0.1/first/segment.ts"));
    await first.storeWebSocket(socket);
    await second.store(exchange("http://127.0.0.1/second"));
    expect(late).toEqual([1100, 700]);
    expect(second.take()).toBe(1100);
  });
});
