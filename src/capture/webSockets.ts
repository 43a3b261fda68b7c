import type { CDPSession, Protocol } from "puppeteer-core";
import type { WebSocketCapture } from "../archive/exchange.js";
import { errorMessage, logger } from "../log/logger.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";

/** One frame as stored: CDP's WebSocketFrame with when (seconds after the handshake) and which way it went. */
interface FrameLine {
  ts: number;
  /** browsertrix-crawler PR #1020's names: "send" from the page, "recv" to it. */
  type: "send" | "recv";
  opcode: number;
  mask: boolean;
  /** Text frames: the text; binary frames (opcode 2): base64, as CDP gives it. */
  payloadData: string;
}

interface OpenSocket {
  url: string;
  /** The handshake request as sent (wallTime), and its headers; null until the browser sends it. */
  date: Date | null;
  requestHeaders: [string, string][];
  response: Protocol.Network.WebSocketResponse | null;
  /** CDP's monotonic time of the handshake's answer: frame times are offsets from it. */
  start: number;
  lines: string[];
  bytes: number;
  /** The sink of the page that opened it: its records are that page's even when written after it. */
  sink: ExchangeSink;
}

/**
 * A socket's frames are held in memory until it is written; past this many bytes of JSON lines, later
 * frames are dropped (the record is still written, with a warning logged): one page's chatty socket
 * must not eat the crawler's memory.
 */
const MAX_SOCKET_BYTES = 64 * 1024 * 1024;

/**
 * The WebSockets one page may have recorded: the first this many it opens (closed ones included); later ones are
 * not recorded, with one warning for the page. Each may hold MAX_SOCKET_BYTES until written (and twice that while
 * its record is made): this bounds what one page's sockets cost at 1 GiB, well past any real page's needs
 * (a chat or a live feed opens one or two, a page reconnecting a few).
 */
export const MAX_SOCKETS_PER_PAGE = 16;

/**
 * Records a tab's WebSockets (Network.webSocket* events; the Network domain is enabled by PageCapture) as
 * iipc/warc-specifications#115 proposes: when a socket closes, or when its page ends while it is still
 * open, its handshake and the frames seen so far go to the sink (records.ts webSocketRecords). Between
 * endPage() and the next beginPage() no socket or frame is recorded: what a page does after it ended is
 * no part of it.
 */
export class SocketRecorder {
  private readonly sockets = new Map<string, OpenSocket>();
  private readonly writes = new Set<Promise<void>>();
  private recording = true;
  /** Sockets the current page opened (recorded or not), and whether the cap's warning was given for it. */
  private opened = 0;
  private capWarned = false;
  private pageUrl = "";
  private pageSink: ExchangeSink;

  constructor(cdp: CDPSession, sink: ExchangeSink) {
    this.pageSink = sink;
    cdp.on("Network.webSocketCreated", (event: Protocol.Network.WebSocketCreatedEvent) => this.created(event));
    cdp.on("Network.webSocketWillSendHandshakeRequest", (event: Protocol.Network.WebSocketWillSendHandshakeRequestEvent) => {
      const socket = this.sockets.get(event.requestId);
      if (!socket) return;
      socket.date = new Date(event.wallTime * 1000);
      socket.requestHeaders = headerPairs(event.request.headers);
    });
    cdp.on("Network.webSocketHandshakeResponseReceived", (event: Protocol.Network.WebSocketHandshakeResponseReceivedEvent) => {
      const socket = this.sockets.get(event.requestId);
      if (!socket) return;
      socket.response = event.response;
      socket.start = event.timestamp;
      // The headers really sent (cookies included), when the browser reports them with the answer.
      if (event.response.requestHeaders) socket.requestHeaders = headerPairs(event.response.requestHeaders);
    });
    cdp.on("Network.webSocketFrameSent", (event: Protocol.Network.WebSocketFrameSentEvent) => this.frame(event, "send"));
    cdp.on("Network.webSocketFrameReceived", (event: Protocol.Network.WebSocketFrameReceivedEvent) => this.frame(event, "recv"));
    cdp.on("Network.webSocketFrameError", (event: Protocol.Network.WebSocketFrameErrorEvent) => {
      const socket = this.sockets.get(event.requestId);
      if (socket) logger.debug("capture", "websocket frame error", { url: socket.url, error: event.errorMessage });
    });
    cdp.on("Network.webSocketClosed", (event: Protocol.Network.WebSocketClosedEvent) => this.write(event.requestId));
  }

  /** A new page: its sockets are recorded, stored through `sink` (the page's). */
  beginPage(pageUrl: string, sink: ExchangeSink): void {
    this.recording = true;
    this.pageUrl = pageUrl;
    this.pageSink = sink;
    this.opened = 0;
    this.capWarned = false;
  }

  /** The page ended: every socket still open is written with the frames seen so far; nothing more is recorded. */
  async endPage(): Promise<void> {
    this.recording = false;
    for (const requestId of [...this.sockets.keys()]) this.write(requestId);
    while (this.writes.size) await Promise.allSettled([...this.writes]);
  }

  private created(event: Protocol.Network.WebSocketCreatedEvent): void {
    if (!this.recording || !/^wss?:/i.test(event.url)) return;
    this.opened += 1;
    if (this.opened > MAX_SOCKETS_PER_PAGE) {
      if (!this.capWarned) logger.warn("capture", "websockets past the page's cap are not recorded", { page: this.pageUrl, url: event.url, capSockets: MAX_SOCKETS_PER_PAGE });
      this.capWarned = true;
      return;
    }
    this.sockets.set(event.requestId, { url: event.url, date: null, requestHeaders: [], response: null, start: 0, lines: [], bytes: 0, sink: this.pageSink });
  }

  private frame(event: Protocol.Network.WebSocketFrameSentEvent, type: FrameLine["type"]): void {
    const socket = this.sockets.get(event.requestId);
    if (!socket?.response) return;
    const { opcode, mask, payloadData } = event.response;
    const line = JSON.stringify({ ts: Math.round((event.timestamp - socket.start) * 1e6) / 1e6, type, opcode, mask, payloadData } satisfies FrameLine) + "\n";
    const size = Buffer.byteLength(line);
    if (socket.bytes + size > MAX_SOCKET_BYTES) {
      if (socket.bytes <= MAX_SOCKET_BYTES) logger.warn("capture", "websocket frames past the cap are not stored", { url: socket.url, capBytes: MAX_SOCKET_BYTES });
      socket.bytes = MAX_SOCKET_BYTES + 1;
      return;
    }
    socket.lines.push(line);
    socket.bytes += size;
  }

  /** Hand a socket's records to the sink, once; a socket whose handshake never got an answer leaves none. */
  private write(requestId: string): void {
    const socket = this.sockets.get(requestId);
    if (!socket) return;
    this.sockets.delete(requestId);
    const { response, date } = socket;
    if (!response || !date) {
      logger.debug("capture", "websocket not stored: its handshake got no answer", { url: socket.url });
      return;
    }
    const capture: WebSocketCapture = {
      url: socket.url,
      date,
      requestHeaders: socket.requestHeaders,
      status: response.status,
      statusText: response.statusText,
      responseHeaders: headerPairs(response.headers),
      frames: Buffer.from(socket.lines.join(""), "utf8"),
    };
    const work = socket.sink.storeWebSocket(capture).then(() => undefined, (err: unknown) => {
      logger.warn("capture", "websocket not stored", { url: socket.url, error: errorMessage(err) });
    });
    this.writes.add(work);
    void work.finally(() => this.writes.delete(work));
  }
}

/** CDP's header objects join repeated headers with newlines: one pair each, as sent. */
function headerPairs(headers: Protocol.Network.Headers): [string, string][] {
  return Object.entries(headers).flatMap(([name, value]) => String(value).split("\n").map((v) => [name, v] as [string, string]));
}
