import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { STATUS_CODES } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CDPSession, Page } from "puppeteer-core";
import type { Protocol } from "puppeteer-core";
import { bodySize, shortOfDeclaredLength, type ConfirmedCapture, type Exchange, type ExchangeBody } from "../archive/exchange.js";
import { logger, errorMessage } from "../log/logger.js";
import { isRenderedDocumentType } from "./documentTypes.js";

/** Bodies larger than this (by Content-Length, or unknown length) are streamed to a temp file. */
export const STREAM_BODY_THRESHOLD = 8_000_000;
/** Streamed bodies up to this size are handed back to the page; larger ones are archived only. */
const MAX_FULFILL_SIZE = 100_000_000;
/** How long to wait for the browser to report a continued response's load as finished or failed. */
const LOAD_OUTCOME_WAIT_MS = 10_000;
/** Network errors that end a response mid-body (Chromium net::ERR_* names). */
const CUT_OFF_ERRORS = /CONTENT_LENGTH_MISMATCH|INCOMPLETE_CHUNKED_ENCODING|INVALID_CHUNKED_ENCODING|CONNECTION_(RESET|CLOSED|ABORTED)|CONTENT_DECODING_FAILED|HTTP2_PROTOCOL_ERROR|QUIC_PROTOCOL_ERROR|NETWORK_CHANGED|TIMED_OUT/;

export interface CaptureEvents {
  /** A complete exchange; the returned promise is awaited before the page counts as captured. */
  onExchange(exchange: Exchange): Promise<void>;
  /** The browser got a 206 for this URL: the caller may fetch the full resource directly. */
  onPartialContent?(url: string, requestHeaders: [string, string][]): void;
  /**
   * The browser revalidated its own cached copy of this URL and got a 304: the caller makes sure the
   * crawl holds the full response (fetching it directly if not) and, when it fetched, says what it got.
   */
  onRevalidated?(url: string, requestHeaders: [string, string][], pageDocument: boolean): Promise<{ status: number; mime: string } | null>;
  /**
   * The browser could not give this GET response's body: the caller may fetch it directly; resolves
   * true when it stored the same response (same status) that way.
   */
  onBodyUnavailable?(url: string, requestHeaders: [string, string][], status: number): Promise<boolean>;
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
  /** URLs whose exchange could not be stored (body unavailable, or storing failed). */
  readonly lost = new Set<string>();
  /** Conditional headers to add to the next document request for a URL (--refresh). */
  private readonly conditional = new Map<string, { headers: Record<string, string>; confirms: ConfirmedCapture }>();
  /** Document requests we really made conditional, by request id: only their 304s mean "not modified". */
  private readonly sentConditional = new Map<string, ConfirmedCapture>();
  /** How each network request ended (null: finished, else the error), until someone asks. */
  private readonly loadOutcomes = new Map<string, string | null>();
  private readonly loadWaiters = new Map<string, (error: string | null) => void>();

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
        capture.lost.add(event.request.url);
        logger.warn("capture", "exchange not captured", { url: event.request.url, error: errorMessage(err) });
      });
      capture.inFlight.add(work);
      void work.finally(() => capture.inFlight.delete(work));
    });
    cdp.on("Network.loadingFinished", (event: Protocol.Network.LoadingFinishedEvent) => capture.settleLoad(event.requestId, null));
    cdp.on("Network.loadingFailed", (event: Protocol.Network.LoadingFailedEvent) => capture.settleLoad(event.requestId, event.errorText));
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

  private settleLoad(networkId: string, error: string | null): void {
    const waiter = this.loadWaiters.get(networkId);
    if (waiter) {
      this.loadWaiters.delete(networkId);
      waiter(error);
      return;
    }
    this.loadOutcomes.set(networkId, error);
    // Outcomes nobody asks for (requests we did not pause on) must not pile up.
    if (this.loadOutcomes.size > 2000) this.loadOutcomes.delete(this.loadOutcomes.keys().next().value!);
  }

  /** How the browser's load of a request ended: null when it finished (or did not say in time), else the error. */
  private loadOutcome(networkId: string): Promise<string | null> {
    if (this.loadOutcomes.has(networkId)) {
      const error = this.loadOutcomes.get(networkId)!;
      this.loadOutcomes.delete(networkId);
      return Promise.resolve(error);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.loadWaiters.delete(networkId);
        resolve(null);
      }, LOAD_OUTCOME_WAIT_MS);
      this.loadWaiters.set(networkId, (error) => {
        clearTimeout(timer);
        resolve(error);
      });
    });
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
    if (status === undefined || event.responseErrorReason || (protocol !== "http:" && protocol !== "https:") || isBrowserInternal(event)) {
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
    const pageDocument = event.resourceType === "Document" && event.frameId === this.mainFrameId;

    if (status === 304 && !confirms) {
      // The browser revalidated a copy from its own cache: the 304 is not the resource, the cached
      // response it renders is. That one must be in the archive as itself.
      await this.continue(requestId);
      const full = (await this.events.onRevalidated?.(request.url, requestHeaders, pageDocument)) ?? null;
      this.captured.push({ url: request.url, status: full?.status ?? 200, mime: full?.mime ?? mime, resourceType: event.resourceType, location, date });
      return;
    }
    this.captured.push({ url: request.url, status, mime, resourceType: event.resourceType, location, date });

    if (status === 206) {
      await this.continue(requestId);
      this.events.onPartialContent?.(request.url, requestHeaders);
      return;
    }

    // A page URL that is not a rendered document (PDF, image, download): archive it, but do not let the
    // browser open a viewer or a download for it (a PDF viewer keeps fetching things of its own).
    const archiveOnly = pageDocument && status >= 200 && status < 300 && !isRenderedDocumentType(mime);
    let body: ExchangeBody;
    let cutOff = false;
    // Bodies the browser never hands over (a redirect's, 204, 304, HEAD): stored empty, not "short".
    const bodiless = (status >= 300 && status < 400 && location) || status === 204 || status === 304 || request.method === "HEAD";
    if (bodiless) {
      body = { kind: "bytes", bytes: new Uint8Array(0) };
      await this.continue(requestId);
    } else if (needsStreaming(responseHeaders)) {
      ({ body, cutOff } = await this.streamBody(event, responseHeaders, archiveOnly));
    } else {
      const read = await this.readBody(requestId, request.url).catch((err: unknown) => new Error(errorMessage(err)));
      if (read instanceof Error) {
        // Never an empty body in its place: that would claim the URL and keep its real body out for good.
        if (archiveOnly) await this.abort(requestId);
        else await this.continue(requestId);
        await this.bodyUnavailable(request, requestHeaders, status, read.message);
        return;
      }
      body = read;
      if (archiveOnly) {
        await this.abort(requestId);
      } else {
        // A connection that drops mid-body still hands over the part received; the browser's load fails.
        const outcome = this.loadOutcome(event.networkId ?? requestId);
        await this.continue(requestId);
        const error = await outcome;
        cutOff = error !== null && CUT_OFF_ERRORS.test(error);
      }
    }
    const truncated = cutOff || (!bodiless && shortOfDeclaredLength(responseHeaders, bodySize(body), true));

    await this.events.onExchange({
      url: request.url,
      method: request.method,
      requestHeaders,
      postData: await this.requestBody(event),
      status,
      statusText: event.responseStatusText || STATUS_CODES[status] || "",
      httpVersion: "HTTP/1.1",
      responseHeaders,
      body,
      bodyDecoded: true,
      date,
      resourceType: event.resourceType,
      confirms,
      ...(truncated ? { truncated: "disconnect" as const } : {}),
    });
  }

  private async continue(requestId: string): Promise<void> {
    await this.cdp.send("Fetch.continueRequest", { requestId }).catch(() => undefined);
  }

  private async abort(requestId: string): Promise<void> {
    await this.cdp.send("Fetch.failRequest", { requestId, errorReason: "Aborted" }).catch(() => undefined);
  }

  /** The response body as the browser received it; throws when the browser cannot give it. */
  private async readBody(requestId: string, url: string): Promise<ExchangeBody> {
    if (failBodyReadForTest(url)) throw new Error("body read failed (test hook WARC_CRAWLER_TEST_FAIL_BODY_ONCE)");
    const { body, base64Encoded } = await this.cdp.send("Fetch.getResponseBody", { requestId });
    return { kind: "bytes", bytes: Buffer.from(body, base64Encoded ? "base64" : "utf8") };
  }

  /** A response whose body the browser could not give: fetched directly (GET only), else reported lost. */
  private async bodyUnavailable(request: Protocol.Network.Request, requestHeaders: [string, string][], status: number, error: string): Promise<void> {
    const stored = request.method === "GET" && this.events.onBodyUnavailable
      ? await this.events.onBodyUnavailable(request.url, requestHeaders, status).catch(() => false)
      : false;
    if (stored) {
      logger.debug("capture", "response body unavailable in the browser; fetched directly", { url: request.url, error });
      return;
    }
    this.lost.add(request.url);
    logger.warn("capture", "response body unavailable; exchange not stored", { url: request.url, method: request.method, error });
  }

  /**
   * The request body, byte for byte: postDataEntries carry it base64-encoded (postData is a lossy UTF-8
   * string); when the browser left it out of the event (large bodies), it is asked for.
   */
  private async requestBody(event: Protocol.Fetch.RequestPausedEvent): Promise<Uint8Array | null> {
    const { request } = event;
    if (!request.hasPostData && !request.postData) return null;
    const entries = request.postDataEntries ?? [];
    if (entries.length && entries.every((e) => e.bytes !== undefined)) {
      return Buffer.concat(entries.map((e) => Buffer.from(e.bytes!, "base64")));
    }
    try {
      const { postData, base64Encoded } = await this.cdp.send("Network.getRequestPostData", { requestId: event.networkId ?? event.requestId });
      return Buffer.from(postData, base64Encoded ? "base64" : "utf8");
    } catch (err) {
      logger.debug("capture", "request body unavailable; kept as the browser reported it", { url: request.url, error: errorMessage(err) });
      return request.postData ? Buffer.from(request.postData, "utf8") : null;
    }
  }

  /**
   * Stream a large body to a temp file, then give the page its response back (or abort it if huge).
   * A stream that breaks off keeps the part received, marked cut off.
   */
  private async streamBody(
    event: Protocol.Fetch.RequestPausedEvent,
    responseHeaders: [string, string][],
    archiveOnly: boolean,
  ): Promise<{ body: ExchangeBody; cutOff: boolean }> {
    const path = join(tmpdir(), `crawler-body-${process.pid}-${randomUUID()}`);
    let size = 0;
    let cutOff = false;
    let stream: string;
    try {
      ({ stream } = await this.cdp.send("Fetch.takeResponseBodyAsStream", { requestId: event.requestId }));
    } catch (err) {
      await this.continue(event.requestId);
      throw err;
    }
    const out = createWriteStream(path);
    try {
      try {
        for (;;) {
          const chunk = await this.cdp.send("IO.read", { handle: stream, size: 1 << 20 });
          const bytes = Buffer.from(chunk.data, chunk.base64Encoded ? "base64" : "utf8");
          size += bytes.length;
          if (!out.write(bytes)) await new Promise<void>((r) => out.once("drain", () => r()));
          if (chunk.eof) break;
        }
      } catch (err) {
        logger.debug("capture", "response body stream broke off", { url: event.request.url, size, error: errorMessage(err) });
        cutOff = true;
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
    return { body: { kind: "file", path, size }, cutOff };
  }
}

/**
 * Test hook: with WARC_CRAWLER_TEST_FAIL_BODY_ONCE=<text>, the first body read of each URL containing
 * <text> fails, as when the browser cannot give a body. Lets tests reach that path on demand.
 */
const failedOnce = new Set<string>();
function failBodyReadForTest(url: string): boolean {
  const match = process.env.WARC_CRAWLER_TEST_FAIL_BODY_ONCE;
  if (!match || !url.includes(match) || failedOnce.has(url)) return false;
  failedOnce.add(url);
  return true;
}

/**
 * Traffic the browser makes for itself, not for the page's content, which is never recorded:
 * CORS preflights (OPTIONS asking for permission; the real request follows and is recorded) and a
 * favicon the browser probed for on its own and did not find.
 */
function isBrowserInternal(event: Protocol.Fetch.RequestPausedEvent): boolean {
  const { request } = event;
  const preflight = event.resourceType === "Preflight" ||
    (request.method === "OPTIONS" && Object.keys(request.headers).some((n) => n.toLowerCase() === "access-control-request-method"));
  if (preflight) return true;
  const status = event.responseStatusCode ?? 0;
  return event.resourceType === "Other" && new URL(request.url).pathname === "/favicon.ico" && (status < 200 || status >= 300);
}

function needsStreaming(headers: [string, string][]): boolean {
  const length = headers.find(([n]) => n.toLowerCase() === "content-length")?.[1];
  if (length !== undefined) return Number(length) > STREAM_BODY_THRESHOLD;
  const mime = headers.find(([n]) => n.toLowerCase() === "content-type")?.[1] ?? "";
  // Unknown length: stream media, whose size is usually large; read the rest directly.
  return /^(video|audio)\//i.test(mime) || /octet-stream|zip|x-tar/i.test(mime);
}
