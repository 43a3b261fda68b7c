import { createHash, randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { multiValueHeader, WARCRecord } from "warcio";
import type { Exchange, ExchangeBody, WebSocketCapture } from "./exchange.js";
import { headerValue } from "./exchange.js";
import { setFilePayload } from "./fileRecord.js";
import { requestLine, statusLine, storedResponseHeaders } from "./httpHeaders.js";

/** The WARC record formats this crawler writes; the one place their headers are decided. */

export const WARC_VERSION = "WARC/1.1";
export const REVISIT_PROFILE_IDENTICAL =
  "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
export const REVISIT_PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

export function newRecordId(): string {
  return `<urn:uuid:${randomUUID()}>`;
}

function bodyChunks(body: ExchangeBody): AsyncIterable<Uint8Array> | Iterable<Uint8Array> {
  if (body.kind === "bytes") return body.bytes.length ? [body.bytes] : [];
  // Opened when read, not now: a record never serialized this way (fileRecord.ts) holds no open file.
  const path = body.path;
  return (async function* () {
    yield* createReadStream(path) as AsyncIterable<Uint8Array>;
  })();
}

/**
 * A protocol name as WARC-Protocol writes it (iipc/warc-specifications#42): Chromium's and Node's spellings
 * ("h2", "http/1.1", "TLS 1.3", "TLSv1.3", "QUIC") lower-cased, a TLS or SSL version as `tls/1.3`; null for
 * what names no protocol ("", "unknown", "data", "blob"...).
 */
export function warcProtocolId(name: string): string | null {
  const value = name.trim().toLowerCase();
  const tls = /^(tls|ssl)\s*v?\s*(\d+(?:\.\d+)?)$/.exec(value);
  if (tls) return `${tls[1]}/${tls[2]}`;
  if (/^(http\/\d(\.\d)?|h2c?|h3(-\d+)?|spdy\/\d|quic)$/.test(value)) return value;
  return null;
}

/** WARC-Protocol, one header a protocol (the form the proposal's discussion settled on, as Heritrix and browsertrix-crawler write it). */
function protocolHeaders(exchange: Exchange): Record<string, string> {
  return exchange.protocols?.length ? { "WARC-Protocol": multiValueHeader("WARC-Protocol", exchange.protocols) } : {};
}

export function responseRecord(exchange: Exchange, recordId: string, digest: string): WARCRecord {
  const record = WARCRecord.create(
    {
      url: exchange.url,
      date: exchange.date.toISOString(),
      type: "response",
      warcVersion: WARC_VERSION,
      statusline: statusLine(exchange),
      httpHeaders: storedResponseHeaders(exchange),
      warcHeaders: {
        "WARC-Record-ID": recordId,
        "WARC-Payload-Digest": digest,
        ...protocolHeaders(exchange),
        ...(exchange.truncated ? { "WARC-Truncated": exchange.truncated } : {}),
        ...(exchange.identifiedPayloadType ? { "WARC-Identified-Payload-Type": exchange.identifiedPayloadType } : {}),
        ...(exchange.jsonMetadata ? { "WARC-JSON-Metadata": exchange.jsonMetadata } : {}),
      },
    },
    bodyChunks(exchange.body),
  );
  if (exchange.body.kind === "file") setFilePayload(record, exchange.body.path);
  return record;
}

/** The Content-Type of a record holding a whole HTTP response (status line, headers, body). */
export const HTTP_RESPONSE_CONTENT_TYPE = "application/http; msgtype=response";

/**
 * The server's own response, when the one stored as the `response` record is the crawler's rewrite of it (an
 * HLS or DASH manifest cut to one rendition): a `metadata` record of the whole HTTP response as it came,
 * with the response's URL and a WARC-Refers-To naming it. Replay indexes no metadata record, so replay
 * serves the rewritten response, and the original stays in the archive for anyone who needs the bytes served.
 */
export function originalResponseRecord(exchange: Exchange & { originalBody: Uint8Array }, refersTo: string): WARCRecord {
  const original: Exchange = { ...exchange, body: { kind: "bytes", bytes: exchange.originalBody } };
  const head = [statusLine(original), ...storedResponseHeaders(original).map(([name, value]) => `${name}: ${value}`)].join("\r\n");
  const content = Buffer.concat([Buffer.from(`${head}\r\n\r\n`), exchange.originalBody]);
  return WARCRecord.create(
    {
      url: exchange.url,
      date: exchange.date.toISOString(),
      type: "metadata",
      warcVersion: WARC_VERSION,
      warcHeaders: {
        "WARC-Record-ID": newRecordId(),
        "WARC-Refers-To": refersTo,
        "Content-Type": HTTP_RESPONSE_CONTENT_TYPE,
        "WARC-Payload-Digest": "sha256:" + createHash("sha256").update(exchange.originalBody).digest("hex"),
      },
    },
    [content],
  );
}

/** What a revisit points back to: the original capture's URL, date and payload digest. */
export interface RevisitTarget {
  url: string;
  /** The original record's WARC-Date, exactly as written there. */
  date: string;
  digest: string;
  /** WACZ file holding the original, when known. */
  waczFilename?: string;
  profile: typeof REVISIT_PROFILE_IDENTICAL | typeof REVISIT_PROFILE_NOT_MODIFIED;
}

/**
 * A revisit record: HTTP response headers only, pointing at the original capture. `httpHead` overrides
 * the exchange's own status line and headers (see notModifiedHead).
 */
export function revisitRecord(
  exchange: Exchange,
  recordId: string,
  target: RevisitTarget,
  httpHead?: { statusline: string; headers: [string, string][] },
): WARCRecord {
  const warcHeaders: Record<string, string> = {
    "WARC-Record-ID": recordId,
    "WARC-Payload-Digest": target.digest,
    ...protocolHeaders(exchange),
  };
  if (target.waczFilename) warcHeaders["WARC-Refers-To-Container"] = `file://${target.waczFilename}`;
  // A revisit of a page carries its storage too (browsertrix-crawler copies WARC-JSON-Metadata).
  if (exchange.jsonMetadata) warcHeaders["WARC-JSON-Metadata"] = exchange.jsonMetadata;
  const record = WARCRecord.create(
    {
      url: exchange.url,
      date: exchange.date.toISOString(),
      type: "revisit",
      warcVersion: WARC_VERSION,
      statusline: httpHead?.statusline ?? statusLine(exchange),
      httpHeaders: httpHead?.headers ?? storedResponseHeaders(exchange),
      warcHeaders,
      refersToUrl: target.url,
      refersToDate: target.date,
    },
    [],
  );
  // warcio picks the identical-payload profile for revisits; set the one that applies.
  record.warcHeaders.headers.set("WARC-Profile", target.profile);
  return record;
}

export function requestRecord(exchange: Exchange, concurrentTo: string): WARCRecord {
  const headers = [...exchange.requestHeaders];
  if (!headerValue(headers, "host")) headers.unshift(["Host", new URL(exchange.url).host]);
  return WARCRecord.create(
    {
      url: exchange.url,
      date: exchange.date.toISOString(),
      type: "request",
      warcVersion: WARC_VERSION,
      statusline: requestLine(exchange),
      httpHeaders: headers,
      warcHeaders: { "WARC-Record-ID": newRecordId(), "WARC-Concurrent-To": concurrentTo, ...protocolHeaders(exchange) },
    },
    exchange.postData?.length ? [exchange.postData] : [],
  );
}

export function warcinfoRecord(filename: string, info: Record<string, string>): WARCRecord {
  return WARCRecord.createWARCInfo(
    { filename, warcVersion: WARC_VERSION, warcHeaders: { "WARC-Record-ID": newRecordId() } },
    info,
  );
}

/**
 * The HTTP head of a server-not-modified revisit: the confirmed response's status line and headers,
 * updated by the 304's headers (as RFC 9111 4.3.4 updates a stored response), with the real status kept
 * as x-orig-status. Replay tools take status and headers from the revisit; a 304 there replays nothing.
 */
export function notModifiedHead(
  exchange: Exchange,
  confirmed: { status: number; statusText?: string; headers: [string, string][] },
): { statusline: string; headers: [string, string][] } {
  const updates = new Map(exchange.responseHeaders.map(([n, v]) => [n.toLowerCase(), [n, v] as [string, string]]));
  const kept = new Set(["content-length", "content-type", "x-orig-content-encoding", "x-orig-transfer-encoding", "content-encoding", "transfer-encoding"]);
  const headers: [string, string][] = confirmed.headers.map(([n, v]) => {
    const update = updates.get(n.toLowerCase());
    if (update && !kept.has(n.toLowerCase())) {
      updates.delete(n.toLowerCase());
      return update;
    }
    return [n, v];
  });
  for (const [lower, header] of updates) if (!kept.has(lower)) headers.push(header);
  headers.push(["x-orig-status", String(exchange.status)]);
  return { statusline: `${exchange.httpVersion} ${confirmed.status} ${confirmed.statusText ?? ""}`.trimEnd(), headers };
}

/**
 * What a page yields besides its HTTP traffic: browsertrix-crawler's `urn:<kind>:<page url>` resource records
 * (pageinfo: what the page requested and the answers, JSON, for QA: src/pipeline/pageResources.ts).
 */
export type PageResourceKind = "text" | "view" | "thumbnail" | "fullPage" | "pageinfo";

export function pageResourceUrn(kind: PageResourceKind, pageUrl: string): string {
  return `urn:${kind}:${pageUrl}`;
}

/**
 * A resource record (WARC-Type resource, no HTTP head): the page's extracted text or a screenshot.
 * Not an HTTP capture, so never a dedupe original nor a revisit.
 */
export function resourceRecord(targetUri: string, date: Date, contentType: string, content: Uint8Array): WARCRecord {
  return WARCRecord.create(
    {
      url: targetUri,
      date: date.toISOString(),
      type: "resource",
      warcVersion: WARC_VERSION,
      warcHeaders: {
        "WARC-Record-ID": newRecordId(),
        "Content-Type": contentType,
        "WARC-Payload-Digest": "sha256:" + createHash("sha256").update(content).digest("hex"),
      },
    },
    content.length ? [content] : [],
  );
}

/** The digest of an empty payload (a handshake's). */
const EMPTY_PAYLOAD_DIGEST = "sha256:" + createHash("sha256").digest("hex");

/** The frames of a WebSocket: JSON lines of CDP's frames (browsertrix-crawler's PR #1020 writes this type). */
export const WEBSOCKET_FRAMES_CONTENT_TYPE = 'application/jsonl; format="cdp"';
/** The handshake records hold headers only: the socket's data is in its resource record (as PR #1020 marks them). */
export const WEBSOCKET_HANDSHAKE_TRUNCATED = "payloadNotAvailable";

/**
 * A WebSocket's records (iipc/warc-specifications#115, browsertrix-crawler PR #1020), all with the ws:// or
 * wss:// URL and `WARC-Resource-Type: websocket`: a resource record of its frames as JSON lines, then its
 * handshake as a response record (101 status line and headers) and a request record (GET and headers),
 * both headers only and marked WARC-Truncated, pointing at the records beside them with WARC-Concurrent-To.
 * Not HTTP captures of a payload: never a dedupe original nor a revisit.
 */
export function webSocketRecords(socket: WebSocketCapture): WARCRecord[] {
  const date = socket.date.toISOString();
  const frames = resourceRecord(socket.url, socket.date, WEBSOCKET_FRAMES_CONTENT_TYPE, socket.frames);
  frames.warcHeaders.headers.set("WARC-Resource-Type", "websocket");
  const framesId = frames.warcHeaders.headers.get("WARC-Record-ID")!;
  const responseId = newRecordId();
  const handshake = { "WARC-Truncated": WEBSOCKET_HANDSHAKE_TRUNCATED, "WARC-Resource-Type": "websocket" };
  const response = WARCRecord.create({
    url: socket.url, date, type: "response", warcVersion: WARC_VERSION,
    statusline: `HTTP/1.1 ${socket.status} ${socket.statusText}`.trimEnd(),
    httpHeaders: socket.responseHeaders,
    warcHeaders: { "WARC-Record-ID": responseId, ...handshake, "WARC-Concurrent-To": framesId, "WARC-Payload-Digest": EMPTY_PAYLOAD_DIGEST },
  }, []);
  const headers = [...socket.requestHeaders];
  if (!headerValue(headers, "host")) headers.unshift(["Host", new URL(socket.url).host]);
  const request = WARCRecord.create({
    url: socket.url, date, type: "request", warcVersion: WARC_VERSION,
    statusline: requestLine({ method: "GET", url: socket.url, httpVersion: "HTTP/1.1" }),
    httpHeaders: headers,
    warcHeaders: { "WARC-Record-ID": newRecordId(), ...handshake, "WARC-Concurrent-To": multiValueHeader("WARC-Concurrent-To", [responseId, framesId]) },
  }, []);
  return [frames, response, request];
}
