import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CDPSession, Protocol } from "puppeteer-core";
import type { ExchangeBody } from "../archive/exchange.js";
import { errorMessage, logger } from "../log/logger.js";

/** Bodies larger than this (by Content-Length, or unknown length) are streamed to a temp file. */
export const STREAM_BODY_THRESHOLD = 8_000_000;
/** Streamed bodies up to this size are handed back to the page; larger ones are archived only. */
const MAX_FULFILL_SIZE = 100_000_000;

/** Whether a paused response's body is streamed to a file rather than read whole. */
export function needsStreaming(headers: [string, string][]): boolean {
  const length = headers.find(([n]) => n.toLowerCase() === "content-length")?.[1];
  if (length !== undefined) return Number(length) > STREAM_BODY_THRESHOLD;
  const mime = headers.find(([n]) => n.toLowerCase() === "content-type")?.[1] ?? "";
  // Unknown length: stream media, whose size is usually large; read the rest directly.
  return /^(video|audio)\//i.test(mime) || /octet-stream|zip|x-tar/i.test(mime);
}

/** The response body as the browser received it; throws when the browser cannot give it. */
export async function readResponseBody(cdp: CDPSession, requestId: string, url: string): Promise<ExchangeBody> {
  if (failBodyReadForTest(url)) throw new Error("body read failed (test hook WARC_CRAWLER_TEST_FAIL_BODY_ONCE)");
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

/**
 * Stream a large body to a temp file, then give the page its response back (or abort it if huge, or if
 * the page only archives it). A stream that breaks off keeps the part received, marked cut off.
 */
export async function streamResponseBody(
  cdp: CDPSession,
  event: Protocol.Fetch.RequestPausedEvent,
  responseHeaders: [string, string][],
  archiveOnly: boolean,
): Promise<{ body: ExchangeBody; cutOff: boolean }> {
  const resume = () => cdp.send("Fetch.continueRequest", { requestId: event.requestId }).catch(() => undefined);
  const abort = () => cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason: "Aborted" }).catch(() => undefined);
  const path = join(tmpdir(), `crawler-body-${process.pid}-${randomUUID()}`);
  let size = 0;
  let cutOff = false;
  let stream: string;
  try {
    ({ stream } = await cdp.send("Fetch.takeResponseBodyAsStream", { requestId: event.requestId }));
  } catch (err) {
    await resume();
    throw err;
  }
  const out = createWriteStream(path);
  try {
    try {
      for (;;) {
        const chunk = await cdp.send("IO.read", { handle: stream, size: 1 << 20 });
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
    await cdp.send("IO.close", { handle: stream }).catch(() => undefined);
  } catch (err) {
    await rm(path, { force: true });
    await resume();
    throw err;
  }
  if (archiveOnly) {
    await abort();
  } else if (size <= MAX_FULFILL_SIZE) {
    const bodyForPage = await readFile(path);
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
      .catch(() => undefined);
  } else {
    logger.warn("capture", "body too large to hand back to the page; archived only", { url: event.request.url, size });
    await abort();
  }
  return { body: { kind: "file", path, size }, cutOff };
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
