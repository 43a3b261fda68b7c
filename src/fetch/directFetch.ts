import { STATUS_CODES } from "node:http";
import { TLSSocket } from "node:tls";
import { Agent, buildConnector, request, type Dispatcher } from "undici";
import { headerValue, shortOfDeclaredLength, type Exchange, type ExchangeBody } from "../archive/exchange.js";
import { warcProtocolId } from "../archive/records.js";
import type { AddressPolicy } from "./addressPolicy.js";
import type { ConnectionRules } from "./connectionRules.js";
import { proxyDispatcherFor } from "../proxy/activeProxies.js";
import { BodySpool, defaultBodyLimits, noteCutShort, type BodyLimits } from "./bodyLimits.js";
import { decoded } from "./contentDecoding.js";

/** User-Agent of the crawler's own fetches when --userAgent is not given. */
export const DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; warc-crawler)";
const UNCONDITIONAL_DROPS = new Set(["host", "accept-encoding", "range", "if-range", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since"]);

/** The direct agent of each address policy (a run has one policy, so one agent). */
const directAgents = new WeakMap<AddressPolicy, Dispatcher>();
/** The TLS version of the direct agent's latest connection to each origin (Node's "TLSv1.3"), for WARC-Protocol. */
const tlsVersions = new Map<string, string>();

/**
 * The direct agent: sockets resolve and check their address themselves (what the name resolves to when
 * connecting counts), as plainFetch's do; each TLS connection's version is noted for its origin.
 */
function directDispatcher(policy: AddressPolicy): Dispatcher {
  const connect = buildConnector({ lookup: policy.lookup });
  return new Agent({
    connect: (options, callback) => connect(options, (...args) => {
      const [, socket] = args;
      if (socket instanceof TLSSocket) {
        const origin = `https://${options.hostname}:${options.port || "443"}`;
        tlsVersions.delete(origin);
        tlsVersions.set(origin, socket.getProtocol() ?? "");
        if (tlsVersions.size > 1000) tlsVersions.delete(tlsVersions.keys().next().value!);
      }
      callback(...args);
    }),
  });
}

/** What a direct fetch went over: undici speaks HTTP/1.1; the TLS version when its own connection said it (not through a proxy). */
function directProtocols(url: string, proxied: boolean): string[] {
  const parsed = new URL(url);
  const tls = parsed.protocol === "https:" && !proxied ? tlsVersions.get(`https://${parsed.hostname}:${parsed.port || "443"}`) : undefined;
  const id = tls ? warcProtocolId(tls) : null;
  return ["http/1.1", ...(id ? [id] : [])];
}

export interface DirectFetchOptions {
  /** The run's address policy and --header rules. */
  rules: Pick<ConnectionRules, "addresses" | "headers">;
  userAgent?: string | null;
  headers?: [string, string][];
  /** Total time allowed for the fetch, connect to last byte (default 60 s). */
  timeoutMs?: number;
  /** Size cap and storage limits of the body (default: only --maxResourceSize's default). */
  limits?: BodyLimits;
  /**
   * Undo the Content-Encoding as the body comes (as the browser would): the body stands in for one the
   * browser received, whose capture notes it if it is cut short (here it is not).
   */
  decode?: boolean;
}

/**
 * Fetch a URL outside the browser (non-HTML pages the browser would only download, full bodies behind a
 * 206). undici hands over the body with transfer-encoding removed and content-encoding kept, exactly
 * the WARC payload (unless `decode`); redirects are not followed, they are captured as they are.
 */
export async function directFetch(url: string, options: DirectFetchOptions): Promise<Exchange> {
  const { addresses, headers } = options.rules;
  await addresses.refuseForbidden(url);
  // The browser's headers are kept, except those that would make the answer partial or conditional
  // (a direct fetch is made to get the full resource) and Accept-Encoding (only codings replay tools read).
  const given = headers.with(url, options.headers ?? []).filter(([n]) => !UNCONDITIONAL_DROPS.has(n.toLowerCase()));
  const defaults: [string, string][] = [
    ["User-Agent", options.userAgent ?? DEFAULT_USER_AGENT],
    ["Accept", "*/*"],
    ["Accept-Encoding", "gzip, deflate, br"],
  ];
  const requestHeaders: [string, string][] = [
    ["Host", new URL(url).host],
    ...defaults.filter(([n]) => !given.some(([g]) => g.toLowerCase() === n.toLowerCase())),
    ...given,
  ];
  const timeout = options.timeoutMs ?? 60_000;
  const limits = options.limits ?? defaultBodyLimits();
  // A total deadline (connect, headers and body): idle timeouts alone let a server dripping a byte
  // now and then (or an endless stream) hold the fetch forever.
  const deadline = AbortSignal.timeout(timeout);
  // Through a proxy the socket goes to the proxy; directly, see directDispatcher.
  let directAgent = directAgents.get(addresses);
  if (!directAgent) directAgents.set(addresses, (directAgent = directDispatcher(addresses)));
  const proxy = proxyDispatcherFor(url);
  const response = await request(url, {
    dispatcher: proxy ?? directAgent,
    method: "GET",
    headers: requestHeaders.filter(([n]) => n !== "Host").flat(),
    headersTimeout: timeout,
    bodyTimeout: timeout,
    signal: deadline,
  });
  const date = new Date();
  const responseHeaders: [string, string][] = [];
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) responseHeaders.push([name, v]);
  }

  const spool = new BodySpool(limits);
  let truncated: Exchange["truncated"];
  let body: ExchangeBody;
  try {
    try {
      const source = options.decode ? decoded(response.body, headerValue(responseHeaders, "content-encoding")) : response.body;
      for await (const chunk of source as AsyncIterable<Buffer>) {
        if (!(await spool.add(chunk))) break;
      }
    } catch (err) {
      // The connection ended mid-body, or the deadline came: keep the part received, marked as cut off.
      if (deadline.aborted) truncated = "time";
      else if (isCutOff(err)) truncated = "disconnect";
      else throw err;
    }
    if (spool.overLimit) {
      truncated = "length";
      response.body.destroy();
    }
    body = await spool.finish();
  } catch (err) {
    response.body.destroy();
    await spool.discard();
    throw err;
  }
  const size = spool.size;
  const bodyDecoded = options.decode ?? false;
  if (!truncated && shortOfDeclaredLength(responseHeaders, size, bodyDecoded)) truncated = "disconnect";
  if ((truncated === "length" || truncated === "time") && !bodyDecoded) noteCutShort(limits, url, truncated, size);

  return {
    url,
    method: "GET",
    requestHeaders,
    postData: null,
    status: response.statusCode,
    statusText: STATUS_CODES[response.statusCode] ?? "",
    httpVersion: "HTTP/1.1",
    protocols: directProtocols(url, proxy !== null),
    responseHeaders,
    body,
    bodyDecoded,
    date,
    resourceType: "Direct",
    // undici hands over the body as sent (content-encoding kept unless decoded here).
    ...(truncated ? { truncated } : {}),
  };
}

/** Errors undici raises when the server's connection ends or stalls before the body is complete. */
function isCutOff(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && ["UND_ERR_SOCKET", "UND_ERR_BODY_TIMEOUT", "ECONNRESET", "UND_ERR_RES_CONTENT_LENGTH_MISMATCH"].includes(code);
}
