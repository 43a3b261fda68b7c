import type { CDPSession, Protocol } from "puppeteer-core";
import type { ExchangeBody } from "../../archive/exchange.js";
import { BodySpool } from "../../fetch/bodyLimits.js";
import { CUT_OFF_ERRORS, type StreamControl, type StreamedBody, type StreamEnd } from "./responseBody.js";

/** One response whose bytes arrive as Network.dataReceived events. */
interface OpenStream {
  chunks: Buffer[];
  /** null: finished; a string: the load failed with this error. */
  ended: string | null | undefined;
  wake: (() => void) | null;
}

/**
 * Bodies of responses that may never end (an EventSource, a script's streaming fetch, a long-lived XHR), read
 * while the page gets them: the response goes on to the page at once (its script sees every event, as a
 * visitor's would), and Network.streamResourceContent copies each chunk to us as it arrives. Reading
 * stops when the load ends, at the size cap ("length"), or once the page has ended and the stream idles
 * ("time"); what arrived is the stored body.
 */
export class LiveStreams {
  private readonly open = new Map<string, OpenStream>();

  constructor(private readonly cdp: CDPSession) {
    cdp.on("Network.dataReceived", (event: Protocol.Network.DataReceivedEvent) => {
      const stream = this.open.get(event.requestId);
      if (!stream || !event.data) return;
      stream.chunks.push(Buffer.from(event.data, "base64"));
      stream.wake?.();
    });
    cdp.on("Network.loadingFinished", (event: Protocol.Network.LoadingFinishedEvent) => this.end(event.requestId, null));
    cdp.on("Network.loadingFailed", (event: Protocol.Network.LoadingFailedEvent) => this.end(event.requestId, event.errorText));
  }

  private end(requestId: string, error: string | null): void {
    const stream = this.open.get(requestId);
    if (!stream) return;
    stream.ended = error;
    stream.wake?.();
  }

  /**
   * Continue a paused response to the page and read its body as it streams; null when the browser will
   * not stream it (the response is still paused then, for another way of reading it).
   */
  async read(event: Protocol.Fetch.RequestPausedEvent, control: StreamControl): Promise<StreamedBody | null> {
    const networkId = event.networkId ?? event.requestId;
    const stream: OpenStream = { chunks: [], ended: undefined, wake: null };
    this.open.set(networkId, stream);
    try {
      const { bufferedData } = await this.cdp.send("Network.streamResourceContent", { requestId: networkId });
      if (bufferedData) stream.chunks.unshift(Buffer.from(bufferedData, "base64"));
    } catch {
      this.open.delete(networkId);
      return null;
    }
    await this.continueToPage(event).catch(() => undefined);
    const spool = new BodySpool(control.limits);
    try {
      const end = await this.collect(stream, spool, control);
      return { body: await spool.finish(), end };
    } catch (err) {
      await spool.discard();
      throw err;
    } finally {
      this.open.delete(networkId);
    }
  }

  /**
   * Hand the response on to the page. Chromium holds back the data and the end of a script's fetch answer marked
   * `Cache-Control: no-store` until the page reads its body (a poll nobody reads gets one
   * dataReceived once all of it is in, then never loadingFinished, so it would be cut at the page's end as
   * unfinished): the page is handed `no-cache` in its place (neither may be reused without asking the server
   * again), and then Chromium reports the end of the body as for any other. The archive keeps the header as sent.
   */
  private continueToPage(event: Protocol.Fetch.RequestPausedEvent): Promise<unknown> {
    const headers = event.responseHeaders ?? [];
    const noStore = (h: Protocol.Fetch.HeaderEntry) => h.name.toLowerCase() === "cache-control" && /\bno-store\b/i.test(h.value);
    // The Fetch domain calls a script's fetch "XHR" (the Network domain "Fetch").
    if (!["Fetch", "XHR"].includes(event.resourceType) || !headers.some(noStore)) return this.cdp.send("Fetch.continueRequest", { requestId: event.requestId });
    return this.cdp.send("Fetch.continueResponse", {
      requestId: event.requestId,
      responseCode: event.responseStatusCode,
      responsePhrase: event.responseStatusText,
      responseHeaders: headers.map((h) => (noStore(h) ? { name: h.name, value: h.value.replace(/\bno-store\b/gi, "no-cache") } : h)),
    });
  }

  private async collect(stream: OpenStream, spool: BodySpool, control: StreamControl): Promise<StreamEnd> {
    for (;;) {
      while (stream.chunks.length) {
        const chunk = stream.chunks.shift()!;
        control.onChunk();
        if (!(await spool.add(chunk))) return "length";
      }
      if (stream.ended !== undefined) return stream.ended === null ? null : CUT_OFF_ERRORS.test(stream.ended) ? "disconnect" : "time";
      const cut = control.cutoff.whenToCut();
      const woken = new Promise<true>((resolve) => (stream.wake = () => resolve(true)));
      const next = await Promise.race([woken, cut.promise]);
      stream.wake = null;
      cut.cancel();
      if (next === null) return "time";
    }
  }
}
