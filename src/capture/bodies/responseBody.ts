import { readFile } from "node:fs/promises";
import type { CDPSession, Protocol } from "puppeteer-core";
import { bodySize, type ExchangeBody } from "../../archive/exchange.js";
import { BodySpool, type BodyLimits } from "../../fetch/bodyLimits.js";
import { errorMessage, logger } from "../../log/logger.js";
import { likelyManifest } from "../../media/manifestFormat.js";
import { testSeams } from "../../util/testSeams.js";

/** Bodies larger than this (by Content-Length) are streamed rather than read whole. */
export const STREAM_BODY_THRESHOLD = 8_000_000;
/**
 * Compressed bodies larger than this are streamed: the browser hands bodies over decoded, and a
 * 100 KB gzip body may decode to 100 MB (a gzip bomb of 300 KB to 300 MB, which Fetch.getResponseBody
 * does not hand over within minutes).
 */
export const ENCODED_STREAM_THRESHOLD = 100_000;
/** Streamed bodies up to this size are handed back to the page; larger ones are archived only. */
const MAX_FULFILL_SIZE = 100_000_000;
/** Network errors that end a response mid-body (Chromium net::ERR_* names). */
export const CUT_OFF_ERRORS = /CONTENT_LENGTH_MISMATCH|INCOMPLETE_CHUNKED_ENCODING|INVALID_CHUNKED_ENCODING|CONNECTION_(RESET|CLOSED|ABORTED)|CONTENT_DECODING_FAILED|HTTP2_PROTOCOL_ERROR|QUIC_PROTOCOL_ERROR|NETWORK_CHANGED|TIMED_OUT/;
/** Resource types whose body of unknown length may be a never-ending stream the page reads as it comes. */
const LIVE_TYPES = new Set(["Fetch", "XHR", "EventSource"]);

/**
 * How a paused response's body is read, decided on what the headers tell:
 * - "read": whole, in one call (Fetch.getResponseBody), for bodies known to be small, and documents,
 *   scripts and styles the page needs whole;
 * - "stream": taken from the browser as a stream (Fetch.takeResponseBodyAsStream), bounded by the size
 *   cap, for a large declared length, a compressed body that may decode to a large one (a gzip bomb),
 *   or media of unknown length;
 * - "live": handed on to the page at once and copied as it arrives (streamingBody.ts), for a body of unknown
 *   length that may never end: an event stream, a script's streaming fetch or XHR.
 */
export function bodyReading(headers: [string, string][], resourceType: string, url: string): "read" | "stream" | "live" {
  const header = (name: string) => headers.find(([n]) => n.toLowerCase() === name)?.[1];
  const length = header("content-length");
  const encoded = !/^\s*(identity)?\s*$/i.test(header("content-encoding") ?? "");
  const mime = header("content-type") ?? "";
  if (length !== undefined && /^\s*\d+\s*$/.test(length)) return Number(length) > (encoded ? ENCODED_STREAM_THRESHOLD : STREAM_BODY_THRESHOLD) ? "stream" : "read";
  // A player's fetch of a playlist sent chunked: a manifest ends, and is read whole to be served and followed.
  if (likelyManifest(url, mime)) return "read";
  if (/^text\/event-stream/i.test(mime) || LIVE_TYPES.has(resourceType)) return "live";
  if (/^(video|audio)\//i.test(mime) || /octet-stream|zip|x-tar/i.test(mime) || resourceType === "Media") return "stream";
  return encoded && resourceType !== "Document" ? "stream" : "read";
}

/** The response body as the browser received it; throws when the browser cannot give it. */
export async function readResponseBody(cdp: CDPSession, requestId: string, url: string): Promise<ExchangeBody> {
  if (failBodyReadForTest(url)) throw new Error("body read failed (test hook TestSeams.failBodyReadOnce)");
  const { body, base64Encoded } = await cdp.send("Fetch.getResponseBody", { requestId });
  return { kind: "bytes", bytes: Buffer.from(body, base64Encoded ? "base64" : "utf8") };
}

/**
 * The request body, byte for byte: postDataEntries carry it base64-encoded (postData is a lossy UTF-8
 * string); when the browser left it out of the event (large bodies), it is asked for.
 */
export async function readRequestBody(cdp: CDPSession, event: Protocol.Fetch.RequestPausedEvent): Promise<Uint8Array | null> {
  const { request } = event;
  if (!request.hasPostData && !request.postData) return null;
  const entries = request.postDataEntries ?? [];
  if (entries.length && entries.every((e) => e.bytes !== undefined)) {
    return Buffer.concat(entries.map((e) => Buffer.from(e.bytes!, "base64")));
  }
  try {
    const { postData, base64Encoded } = await cdp.send("Network.getRequestPostData", { requestId: event.networkId ?? event.requestId });
    return Buffer.from(postData, base64Encoded ? "base64" : "utf8");
  } catch (err) {
    logger.debug("capture", "request body unavailable; kept as the browser reported it", { url: request.url, error: errorMessage(err) });
    return request.postData ? Buffer.from(request.postData, "utf8") : null;
  }
}

/** Where a streamed body's reading reports to, and what ends it. */
export interface StreamControl {
  limits: BodyLimits;
  /** Bytes arrived (the network-idle wait counts a stream that has started as quiet). */
  onChunk(): void;
  /** Cuts the reading once the page has ended and the stream has gone idle or outlived its grace. */
  cutoff: StreamCutoff;
  /** For a compressed body: the body fetched again and decoded outside the browser, null if that failed. */
  decodeDirectly?: DirectDecode;
}

/** A compressed body decoded outside the browser, whole or cut at the size cap; null: read it through CDP. */
export type DirectDecode = () => Promise<{ body: ExchangeBody; truncated: "length" | null } | null>;

/**
 * Decoded bytes read through CDP after which a compressed body that decodes to this many times its declared
 * length (or more, or of no declared length) is decoded outside the browser instead: CDP hands over about
 * 30 MB a second (base64, a megabyte a call), zlib about ten times that, and the bytes fetched again are
 * a fraction of those decoded.
 */
const DIRECT_DECODE_AFTER = 16 * 1024 * 1024;
const DIRECT_DECODE_RATIO = 4;

/** A body read as it streamed, how it ended, and whether the capture itself handed it on to the page (fulfilled it). */
export interface StreamedBody {
  body: ExchangeBody;
  end: StreamEnd;
  handedOver?: boolean;
}

/** How a streamed body ended short: cut off by the network, cut at the size cap, or still open when the page ended. */
export type StreamEnd = "disconnect" | "length" | "time" | null;

/**
 * Stream a body as it arrives (in memory, past 4 MB in a temp file), then give the page its response
 * back, or abort it (too large, cut short, or the page only archives it). Reading stops at the size cap
 * ("length"), when the stream breaks ("disconnect"), or once the page has ended and the stream stays
 * idle or outlives its grace ("time"): a never-ending response is kept with what arrived.
 */
export async function streamResponseBody(
  cdp: CDPSession,
  event: Protocol.Fetch.RequestPausedEvent,
  responseHeaders: [string, string][],
  archiveOnly: boolean,
  control: StreamControl,
): Promise<StreamedBody> {
  const resume = () => cdp.send("Fetch.continueRequest", { requestId: event.requestId }).catch(() => undefined);
  const abort = () => cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason: "Aborted" }).catch(() => undefined);
  let stream: string;
  try {
    ({ stream } = await cdp.send("Fetch.takeResponseBodyAsStream", { requestId: event.requestId }));
  } catch (err) {
    await resume();
    throw err;
  }
  const spool = new BodySpool(control.limits);
  let end: StreamEnd = null;
  let body: ExchangeBody;
  let handedOver = false;
  try {
    const declared = Number(responseHeaders.find(([n]) => n.toLowerCase() === "content-length")?.[1] ?? NaN);
    const switchAt = control.decodeDirectly ? Math.max(DIRECT_DECODE_AFTER, declared * DIRECT_DECODE_RATIO || 0) : Infinity;
    const read = await readStream(cdp, stream, spool, control, event.request.url, switchAt);
    const direct = read === "decode directly" ? await control.decodeDirectly!() : null;
    if (direct) {
      await spool.discard();
      body = direct.body;
      end = direct.truncated;
      logger.debug("capture", "compressed body decoded outside the browser", { url: event.request.url, size: bodySize(body) });
    } else {
      end = read === "decode directly" ? await readStream(cdp, stream, spool, control, event.request.url, Infinity) as StreamEnd : read;
      body = await spool.finish();
    }
  } catch (err) {
    await spool.discard();
    await cdp.send("IO.close", { handle: stream }).catch(() => undefined);
    await abort();
    throw err;
  }
  await cdp.send("IO.close", { handle: stream }).catch(() => undefined);
  if (archiveOnly || end === "length" || end === "time") {
    await abort();
  } else if (bodySize(body) <= MAX_FULFILL_SIZE) {
    const bodyForPage = body.kind === "bytes" ? Buffer.from(body.bytes) : await readFile(body.path);
    const headers = responseHeaders
      .filter(([n]) => !["content-encoding", "content-length", "transfer-encoding"].includes(n.toLowerCase()))
      .map(([name, value]) => ({ name, value }));
    await cdp
      .send("Fetch.fulfillRequest", {
        requestId: event.requestId,
        responseCode: event.responseStatusCode ?? 200,
        responseHeaders: headers,
        body: bodyForPage.toString("base64"),
      })
      .then(() => (handedOver = true))
      .catch(() => undefined);
  } else {
    logger.warn("capture", "body too large to hand back to the page; archived only", { url: event.request.url, size: bodySize(body) });
    await abort();
  }
  return { body, end, handedOver };
}

/** Read until the stream ends, or until `switchAt` bytes were read ("decode directly": the stream stays open). */
async function readStream(cdp: CDPSession, stream: string, spool: BodySpool, control: StreamControl, url: string, switchAt: number): Promise<StreamEnd | "decode directly"> {
  for (;;) {
    if (spool.size >= switchAt) return "decode directly";
    const cut = control.cutoff.whenToCut();
    let chunk: Protocol.IO.ReadResponse | null;
    try {
      chunk = await Promise.race([cdp.send("IO.read", { handle: stream, size: 1 << 20 }), cut.promise]);
    } catch (err) {
      logger.debug("capture", "response body stream broke off", { url, size: spool.size, error: errorMessage(err) });
      return "disconnect";
    } finally {
      cut.cancel();
    }
    if (chunk === null) return "time";
    const bytes = Buffer.from(chunk.data, chunk.base64Encoded ? "base64" : "utf8");
    if (bytes.length) {
      control.onChunk();
      if (!(await spool.add(bytes))) return "length";
    }
    if (chunk.eof) return null;
  }
}

/**
 * Ends streamed bodies of one page attempt: once the page has ended, a read that gets no bytes for
 * `idleMs`, or any read past `graceMs` after the end, is cut ("time"). Bodies still flowing when the
 * page ends go on up to the grace or the size cap; one that only trickles (keep-alives) or waits is cut
 * within `idleMs`. (The capture gives bodies of unknown length, which may never end, a short grace, and
 * large bodies of declared length, which do end, a long one.)
 */
export class StreamCutoff {
  private endedAt: number | null = null;
  private readonly waiting = new Set<() => void>();

  constructor(private readonly idleMs: number, private readonly graceMs: number) {}

  get ended(): boolean {
    return this.endedAt !== null;
  }

  /** The page is done: from now on idle streams are cut. */
  end(): void {
    if (this.endedAt !== null) return;
    this.endedAt = Date.now();
    for (const arm of [...this.waiting]) arm();
  }

  /** For one read: resolves with null when that read should be abandoned; cancel() when it returned. */
  whenToCut(): { promise: Promise<null>; cancel(): void } {
    let timer: NodeJS.Timeout | undefined;
    let arm: (() => void) | undefined;
    const promise = new Promise<null>((resolve) => {
      arm = () => {
        this.waiting.delete(arm!);
        const graceLeft = this.graceMs - (Date.now() - this.endedAt!);
        timer = setTimeout(() => resolve(null), Math.max(0, Math.min(this.idleMs, graceLeft)));
      };
      if (this.endedAt !== null) arm();
      else this.waiting.add(arm);
    });
    return {
      promise,
      cancel: () => {
        clearTimeout(timer);
        if (arm) this.waiting.delete(arm);
      },
    };
  }
}

/** Test hook (TestSeams.failBodyReadOnce): a body read fails, as when the browser cannot give a body. Lets tests reach that path on demand. */
function failBodyReadForTest(url: string): boolean {
  return testSeams().failBodyReadOnce(url);
}
