/** One HTTP request/response pair as captured from the browser or a direct fetch. */
export interface Exchange {
  url: string;
  method: string;
  requestHeaders: [string, string][];
  postData: Uint8Array | null;
  status: number;
  statusText: string;
  /** The stored status and request lines' version: HTTP/1.1 (or HTTP/1.0), whatever went over the wire (h2 too). */
  httpVersion: string;
  /**
   * What went over the wire, as WARC-Protocol values (iipc/warc-specifications#42): the HTTP protocol (`h2`,
   * `http/1.1`...), then the TLS version (`tls/1.3`) if any; absent or empty when not known.
   */
  protocols?: string[];
  responseHeaders: [string, string][];
  /** The stored body: bytes in memory, or a temp file for large bodies (deleted after writing). */
  body: ExchangeBody;
  /**
   * True when the body has had its content-encoding removed (CDP always hands decoded bodies).
   * Decides which headers are renamed so that headers, block and digest agree.
   */
  bodyDecoded: boolean;
  /** When the response arrived (WARC-Date of the response record). */
  date: Date;
  /** CDP resource type (Document, Script, Image...) or "Direct" for direct fetches. */
  resourceType: string;
  /** Set on a 304 answering a conditional request we sent: the archived capture it confirms. */
  confirms?: ConfirmedCapture;
  /**
   * Set when the stored body is only the part received (WARC-Truncated, with the WARC 1.1 reasons):
   * "disconnect" the connection ended before the declared length or the load failed mid-body (a retry
   * may get it whole); "length" the body passed --maxResourceSize or a storage limit; "time" it was
   * still flowing when its page ended (a never-ending stream) or its fetch's deadline came.
   */
  truncated?: TruncationReason;
  /**
   * The crawled page's own document (or a redirect on the way to it): stored in the WACZ that lists
   * the page, even when the crawl holds this exchange elsewhere already.
   */
  pageDocument?: boolean;
  /**
   * WARC-Identified-Payload-Type of its response record: the type and charset the browser took the page's
   * document for (`text/html; charset="windows-1252"`), which replay prefers over a missing or wrong
   * Content-Type; absent when not known.
   */
  identifiedPayloadType?: string;
  /** WARC-JSON-Metadata of its response record (browsertrix-crawler's: --saveStorage's {"storage": ...}). */
  jsonMetadata?: string;
  /**
   * The body as the server sent it, when `body` is the crawler's rewrite of it (an HLS or DASH manifest cut
   * to the one rendition replay asks for: capture/adaptiveStreams.ts): kept beside the response in a
   * metadata record (archive/records.ts originalBodyRecord).
   */
  originalBody?: Uint8Array;
}

export type TruncationReason = "disconnect" | "length" | "time";

/** The archived capture a conditional request was made for (from the capture history). */
export interface ConfirmedCapture {
  url: string;
  crawlId: string;
  /** WARC-Date digits of the capture holding the payload. */
  date: string;
  digest: string;
  waczIndex: number;
  waczFilename: string | null;
  /** The confirmed response as archived (status line and headers), when the history has it. */
  status: number;
  statusText?: string;
  headers?: [string, string][];
}

export type ExchangeBody =
  | { kind: "bytes"; bytes: Uint8Array }
  /** `digest`: its WARC-Payload-Digest when computed as the file was written (not read again for it). */
  | { kind: "file"; path: string; size: number; digest?: string };

export function bodySize(body: ExchangeBody): number {
  return body.kind === "bytes" ? body.bytes.length : body.size;
}

/** The body is shorter than the Content-Length the server declared (only comparable without a content-encoding). */
export function shortOfDeclaredLength(headers: [string, string][], received: number, bodyDecoded: boolean): boolean {
  const declared = comparableDeclaredLength(headers, bodyDecoded);
  return declared !== null && received < declared;
}

/** The body has every byte of the Content-Length the server declared: whole, whatever became of its load. */
export function wholeByDeclaredLength(headers: [string, string][], received: number, bodyDecoded: boolean): boolean {
  const declared = comparableDeclaredLength(headers, bodyDecoded);
  return declared !== null && received >= declared;
}

/** The declared Content-Length, null when there is none or it counts other bytes than the body's (a decoded body's content-encoding). */
function comparableDeclaredLength(headers: [string, string][], bodyDecoded: boolean): number | null {
  const declared = headerValue(headers, "content-length");
  if (declared === undefined || !/^\d+$/.test(declared.trim())) return null;
  const encoding = (headerValue(headers, "content-encoding") ?? "identity").trim().toLowerCase();
  if (bodyDecoded && encoding !== "identity" && encoding !== "") return null;
  return Number(declared.trim());
}

export function headerValue(headers: [string, string][], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

export function mimeTypeOf(exchange: Pick<Exchange, "responseHeaders">): string {
  return (headerValue(exchange.responseHeaders, "content-type") ?? "").split(";")[0].trim().toLowerCase();
}

/**
 * A WebSocket as the browser saw it (capture/webSockets.ts): its handshake's heads (the handshake has no
 * body) and its frames as JSON lines, one a frame, in the order the browser reported them.
 */
export interface WebSocketCapture {
  /** The ws:// or wss:// URL. */
  url: string;
  /** When the handshake request was sent: WARC-Date of the socket's three records. */
  date: Date;
  requestHeaders: [string, string][];
  status: number;
  statusText: string;
  responseHeaders: [string, string][];
  /** `{ts, type, opcode, mask, payloadData}` lines (records.ts WEBSOCKET_FRAMES_CONTENT_TYPE). */
  frames: Uint8Array;
}
