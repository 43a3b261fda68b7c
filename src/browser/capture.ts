import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { STATUS_CODES } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CDPSession, Page } from "puppeteer-core";
import type { Protocol } from "puppeteer-core";
import type { ConfirmedCapture, Exchange, ExchangeBody } from "../archive/exchange.js";
import { logger, errorMessage } from "../log/logger.js";
import { isRenderedDocumentType } from "./documentTypes.js";

/** Bodies larger than this (by Content-Length, or unknown length) are streamed to a temp file. */
export const STREAM_BODY_THRESHOLD = 8_000_000;
/** Streamed bodies up to this size are handed back to the page; larger ones are archived only. */
const MAX_FULFILL_SIZE = 100_000_000;

export interface CaptureEvents {
  /** A complete exchange; the returned promise is awaited before the page counts as captured. */
  onExchange(exchange: Exchange): Promise<void>;
  /** The browser got a 206 for this URL: the caller may fetch the full resource directly. */
  onPartialContent?(url: string, requestHeaders: [string, string][]): void;
}

/** Summary of what a page loaded, for deciding the page's status and type. */
export interface CapturedSummary {
  url: string;
  status: number;
  mime: string;
  resourceType: string;
  location: string | null;
  date: Date;
}

/**
 * Captures every HTTP exchange of one browser tab through the CDP Fetch domain at the response stage:
 * the browser pauses each response, we read its body, hand the exchange on, and let the response continue.
 */
export class PageCapture {
  private readonly inFlight = new Set<Promise<void>>();
  readonly captured: CapturedSummary[] = [];
  /** Conditional headers to add to the next document request for a URL (--refresh). */
  private readonly conditional = new Map<string, { headers: Record<string, string>; confirms: ConfirmedCapture }>();
  /** Document requests we really made conditional, by request id: only their 304s mean "not modified". */
  private readonly sentConditional = new Map<string, ConfirmedCapture>();

  private constructor(
    private readonly cdp: CDPSession,
    private readonly events: CaptureEvents,
    private readonly mainFrameId: string,
  ) {}

  static async attach(page: Page, events: CaptureEvents): Promise<PageCapture> {
    const cdp = await page.createCDPSession();
    const { frameTree } = await cdp.send("Page.getFrameTree");
    const capture = new PageCapture(cdp, events, frameTree.frame.id);
    cdp.on("Fetch.requestPaused", (event: Protocol.Fetch.RequestPausedEvent) => {
      const work = capture.onPaused(event).catch((err: unknown) => {
        logger.warn("capture", "exchange not captured", { url: event.request.url, error: errorMessage(err) });
      });
      capture.inFlight.add(work);
      void work.finally(() => capture.inFlight.delete(work));
    });
    await cdp.send("Network.enable");
    // Requests answered by a site's service worker would never reach the network stage we capture.
    await cdp.send("Network.setBypassServiceWorker", { bypass: true });
    await cdp.send("Fetch.enable", {
      patterns: [
        // Documents also pause before they are sent, so a refresh can make them conditional.
        { urlPattern: "*", resourceType: "Document", requestStage: "Request" },
        { urlPattern: "*", requestStage: "Response" },
      ],
    });
    return capture;
  }

  /** Make the next request for this document conditional (If-None-Match / If-Modified-Since). */
  expectConditional(url: string, headers: Record<string, string>, confirms: ConfirmedCapture): void {
    this.conditional.set(url, { headers, confirms });
  }

  clearConditional(): void {
    this.conditional.clear();
  }

  private async onRequestStage(event: Protocol.Fetch.RequestPausedEvent): Promise<void> {
    const pending = event.frameId === this.mainFrameId ? this.conditional.get(event.request.url) : undefined;
    if (!pending) return this.continue(event.requestId);
    this.conditional.delete(event.request.url);
    this.sentConditional.set(event.networkId ?? event.requestId, pending.confirms);
    const headers = Object.entries({ ...event.request.headers, ...pending.headers }).map(([name, value]) => ({ name, value: String(value) }));
    await this.cdp.send("Fetch.continueRequest", { requestId: event.requestId, headers }).catch(() => undefined);
  }

  /** Wait until every exchange seen so far has been handed on and stored. */
  async drain(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  async detach(): Promise<void> {
    await this.drain();
    await this.cdp.detach().catch(() => undefined);
  }

  private async onPaused(event: Protocol.Fetch.RequestPausedEvent): Promise<void> {
    const { requestId, request } = event;
    if (event.responseStatusCode === undefined && !event.responseErrorReason) return this.onRequestStage(event);
    const status = event.responseStatusCode;
    const protocol = new URL(request.url).protocol;
    if (status === undefined || event.responseErrorReason || (protocol !== "http:" && protocol !== "https:")) {
      await this.continue(requestId);
      return;
    }
    const responseHeaders = (event.responseHeaders ?? []).map(({ name, value }) => [name, value] as [string, string]);
    const requestHeaders = Object.entries(request.headers).map(([n, v]) => [n, String(v)] as [string, string]);
    const confirms = status === 304 ? this.sentConditional.get(event.networkId ?? requestId) : undefined;
    this.sentConditional.delete(event.networkId ?? requestId);
    const date = new Date();
    const location = responseHeaders.find(([n]) => n.toLowerCase() === "location")?.[1] ?? null;
    const mime = (responseHeaders.find(([n]) => n.toLowerCase() === "content-type")?.[1] ?? "").split(";")[0].trim();
    this.captured.push({ url: request.url, status, mime, resourceType: event.resourceType, location, date });

    if (status === 206) {
      await this.continue(requestId);
      this.events.onPartialContent?.(request.url, requestHeaders);
      return;
    }

    // A page URL that is not a rendered document (PDF, image, download): archive it, but do not let the
    // browser open a viewer or a download for it (a PDF viewer keeps fetching things of its own).
    const archiveOnly = event.resourceType === "Document" && event.frameId === this.mainFrameId &&
      status >= 200 && status < 300 && !isRenderedDocumentType(mime);
    let body: ExchangeBody;
    if ((status >= 300 && status < 400 && location) || status === 204 || status === 304) {
      body = { kind: "bytes", bytes: new Uint8Array(0) };
      await this.continue(requestId);
    } else if (needsStreaming(responseHeaders)) {
      body = await this.streamBody(event, responseHeaders, archiveOnly);
    } else {
      body = await this.readBody(requestId);
      if (archiveOnly) await this.abort(requestId);
      else await this.continue(requestId);
    }

    await this.events.onExchange({
      url: request.url,
      method: request.method,
      requestHeaders,
      postData: request.postData ? Buffer.from(request.postData, "utf8") : null,
      status,
      statusText: event.responseStatusText || STATUS_CODES[status] || "",
      httpVersion: "HTTP/1.1",
      responseHeaders,
      body,
      bodyDecoded: true,
      date,
      resourceType: event.resourceType,
      confirms,
    });
  }

  private async continue(requestId: string): Promise<void> {
    await this.cdp.send("Fetch.continueRequest", { requestId }).catch(() => undefined);
  }

  private async abort(requestId: string): Promise<void> {
    await this.cdp.send("Fetch.failRequest", { requestId, errorReason: "Aborted" }).catch(() => undefined);
  }

  private async readBody(requestId: string): Promise<ExchangeBody> {
    try {
      const { body, base64Encoded } = await this.cdp.send("Fetch.getResponseBody", { requestId });
      return { kind: "bytes", bytes: Buffer.from(body, base64Encoded ? "base64" : "utf8") };
    } catch {
      return { kind: "bytes", bytes: new Uint8Array(0) };
    }
  }

  /** Stream a large body to a temp file, then give the page its response back (or abort it if huge). */
  private async streamBody(
    event: Protocol.Fetch.RequestPausedEvent,
    responseHeaders: [string, string][],
    archiveOnly: boolean,
  ): Promise<ExchangeBody> {
    const path = join(tmpdir(), `crawler-body-${process.pid}-${randomUUID()}`);
    let size = 0;
    try {
      const { stream } = await this.cdp.send("Fetch.takeResponseBodyAsStream", { requestId: event.requestId });
      const out = createWriteStream(path);
      for (;;) {
        const chunk = await this.cdp.send("IO.read", { handle: stream, size: 1 << 20 });
        const bytes = Buffer.from(chunk.data, chunk.base64Encoded ? "base64" : "utf8");
        size += bytes.length;
        if (!out.write(bytes)) await new Promise<void>((r) => out.once("drain", () => r()));
        if (chunk.eof) break;
      }
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      await this.cdp.send("IO.close", { handle: stream }).catch(() => undefined);
    } catch (err) {
      await rm(path, { force: true });
      await this.continue(event.requestId);
      throw err;
    }
    if (archiveOnly) {
      await this.abort(event.requestId);
    } else if (size <= MAX_FULFILL_SIZE) {
      const bodyForPage = await readFile(path);
      const headers = responseHeaders
        .filter(([n]) => !["content-encoding", "content-length", "transfer-encoding"].includes(n.toLowerCase()))
        .map(([name, value]) => ({ name, value }));
      await this.cdp
        .send("Fetch.fulfillRequest", {
          requestId: event.requestId,
          responseCode: event.responseStatusCode ?? 200,
          responseHeaders: headers,
          body: bodyForPage.toString("base64"),
        })
        .catch(() => undefined);
    } else {
      logger.warn("capture", "body too large to hand back to the page; archived only", { url: event.request.url, size });
      await this.abort(event.requestId);
    }
    return { kind: "file", path, size };
  }
}

function needsStreaming(headers: [string, string][]): boolean {
  const length = headers.find(([n]) => n.toLowerCase() === "content-length")?.[1];
  if (length !== undefined) return Number(length) > STREAM_BODY_THRESHOLD;
  const mime = headers.find(([n]) => n.toLowerCase() === "content-type")?.[1] ?? "";
  // Unknown length: stream media, whose size is usually large; read the rest directly.
  return /^(video|audio)\//i.test(mime) || /octet-stream|zip|x-tar/i.test(mime);
}
