import type { CDPSession, Protocol } from "puppeteer-core";
import { warcProtocolId } from "../archive/records.js";
import { networkIdOf } from "./browserInternal.js";

/** How long to wait for Chromium to report a continued response's protocol, when its load has not ended either. */
const PROTOCOL_WAIT_MS = 2000;
/** Reports nobody asks for (requests the capture did not pause on) must not pile up; nor origins. */
const MAX_KEPT = 2000;

interface Reported {
  url: string;
  http: string | null;
  tls: string | null;
}

/** What an exchange's records say of its protocol: the status line's version and the WARC-Protocol values. */
export interface ExchangeProtocol {
  httpVersion: string;
  protocols?: string[];
}

/**
 * The protocol each response came over (iipc/warc-specifications#42's WARC-Protocol). Fetch.requestPaused does
 * not say; Network.responseReceived (response.protocol "h2", "http/1.1"...; securityDetails.protocol "TLS 1.3")
 * does, but only once the paused response is continued, and for a redirect hop it is the next request's
 * requestWillBeSent that carries it (redirectResponse). Chromium reports a response the capture fulfilled itself
 * (a streamed body, responseBody.ts) as http/1.1 without TLS, and leaves out securityDetails now and then (after a
 * redirect on one connection): what an origin's responses said is kept, and used for those.
 */
export class ResponseProtocols {
  /** Reports by network request id: a redirect chain shares one id, so its hops are told apart by URL. */
  private readonly reports = new Map<string, Reported[]>();
  private readonly ended = new Set<string>();
  private readonly waiters = new Map<string, () => void>();
  /** What an origin's responses were last seen to come over (from reports Chromium cannot have made up). */
  private readonly origins = new Map<string, { http: string; tls: string | null }>();

  listen(cdp: CDPSession): void {
    cdp.on("Network.responseReceived", (event: Protocol.Network.ResponseReceivedEvent) => this.report(event.requestId, event.response));
    cdp.on("Network.requestWillBeSent", (event: Protocol.Network.RequestWillBeSentEvent) => {
      if (event.redirectResponse) this.report(event.requestId, event.redirectResponse);
    });
    cdp.on("Network.loadingFinished", (event: Protocol.Network.LoadingFinishedEvent) => this.end(event.requestId));
    cdp.on("Network.loadingFailed", (event: Protocol.Network.LoadingFailedEvent) => this.end(event.requestId));
  }

  /**
   * The protocol of a paused response the capture has continued (or fulfilled: `fulfilled`, then Chromium's
   * report is not the server's and the origin's is used). Waits for the report until the load ends, at most
   * PROTOCOL_WAIT_MS; what is not known is left out. A fetch of the browser's own (no network id) is never
   * reported: its origin's protocol is used.
   */
  async of(event: Protocol.Fetch.RequestPausedEvent, fulfilled: boolean): Promise<ExchangeProtocol> {
    const networkId = networkIdOf(event);
    const url = event.request.url;
    if (!fulfilled && networkId !== null) await this.reported(networkId, url);
    const own = networkId === null ? null : this.take(networkId, url);
    const https = url.startsWith("https:");
    const origin = this.origins.get(originOfUrl(url));
    const http = (fulfilled ? null : own?.http) ?? origin?.http ?? null;
    const tls = https ? ((fulfilled ? null : own?.tls) ?? origin?.tls ?? null) : null;
    const protocols = [http, tls].filter((p): p is string => p !== null);
    return { httpVersion: http === "http/1.0" ? "HTTP/1.0" : "HTTP/1.1", ...(protocols.length ? { protocols } : {}) };
  }

  private report(networkId: string, response: Protocol.Network.Response): void {
    const http = response.protocol ? warcProtocolId(response.protocol) : null;
    const tls = response.securityDetails ? warcProtocolId(response.securityDetails.protocol) : null;
    const list = this.reports.get(networkId) ?? [];
    list.push({ url: response.url, http, tls });
    this.reports.set(networkId, list);
    trim(this.reports);
    // A response with securityDetails came from the server (a fulfilled one has none); plain http has no TLS to lose.
    if (http && (tls || response.url.startsWith("http:"))) {
      this.origins.delete(originOfUrl(response.url));
      this.origins.set(originOfUrl(response.url), { http, tls });
      trim(this.origins);
    }
    this.waiters.get(networkId)?.();
  }

  private end(networkId: string): void {
    this.ended.add(networkId);
    if (this.ended.size > MAX_KEPT) this.ended.delete(this.ended.values().next().value!);
    this.waiters.get(networkId)?.();
  }

  /** Resolves once the response for `url` was reported, the load ended, or the wait is over. */
  private reported(networkId: string, url: string): Promise<void> {
    const done = () => this.ended.has(networkId) || (this.reports.get(networkId) ?? []).some((r) => r.url === url);
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(networkId);
        resolve();
      };
      const timer = setTimeout(finish, PROTOCOL_WAIT_MS);
      this.waiters.set(networkId, () => {
        if (done()) finish();
      });
    });
  }

  /** The report for `url` (a redirect chain's hop), removed; those of hops before it are dropped. */
  private take(networkId: string, url: string): Reported | null {
    const list = this.reports.get(networkId);
    if (!list) return null;
    const index = list.findIndex((r) => r.url === url);
    if (index < 0) return null;
    const [found] = list.splice(0, index + 1).slice(-1);
    if (!list.length) this.reports.delete(networkId);
    return found;
  }
}

function originOfUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

function trim(map: Map<string, unknown>): void {
  if (map.size > MAX_KEPT) map.delete(map.keys().next().value!);
}
