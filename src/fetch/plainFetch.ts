import { Readable, Transform, type TransformCallback } from "node:stream";
import { Agent, request, type Dispatcher } from "undici";
import type { AddressPolicy } from "./addressPolicy.js";
import { decoded, forward } from "./contentDecoding.js";
import { DEFAULT_USER_AGENT } from "./directFetch.js";
import type { ConnectionRules } from "./connectionRules.js";
import { proxyDispatcherFor } from "../proxy/activeProxies.js";

/**
 * Fetches the crawler reads for itself, not for the archive (robots.txt, sitemaps): redirects followed
 * (each hop's address checked against the address policy), Content-Encoding undone, bodies capped and
 * the whole fetch bounded in time, so a hostile server can neither fill memory or disk nor hold it.
 */
export interface PlainFetchOptions {
  /** The run's address policy and --header rules (fetch/connectionRules.ts). */
  rules: Pick<ConnectionRules, "addresses" | "headers">;
  userAgent: string | null;
  /**
   * Total deadline of the fetch: connecting, every redirect, the headers and the whole body. Past it
   * the fetch (or the body stream) fails with FetchDeadlineError, however steadily bytes still arrive.
   */
  timeoutMs: number;
  /** Largest body (after decoding) read; past it the body stream fails with BodyTooLargeError. */
  maxBytes: number;
}

export interface PlainResponse {
  status: number;
  headers: Record<string, string>;
  /** The body with its Content-Encoding undone. */
  body: Readable;
}

export class BodyTooLargeError extends Error {}
export class FetchDeadlineError extends Error {}

// RFC 9309 asks crawlers to follow at least five redirects for robots.txt; sitemaps are treated alike.
const MAX_REDIRECTS = 5;
/** The agent of each address policy (a run has one policy, so one agent). */
const agents = new WeakMap<AddressPolicy, Dispatcher>();

export async function plainFetch(url: string, options: PlainFetchOptions): Promise<PlainResponse> {
  // Sockets resolve and check their address themselves too: what the name resolves to when connecting counts.
  const { addresses, headers: headerRules } = options.rules;
  let agent = agents.get(addresses);
  if (!agent) agents.set(addresses, (agent = new Agent({ connect: { lookup: addresses.lookup } })));
  const deadline = new AbortController();
  let body: Readable | null = null;
  const timer = setTimeout(() => {
    const error = new FetchDeadlineError(`${url} not read within ${options.timeoutMs / 1000}s`);
    deadline.abort(error);
    body?.destroy(error);
  }, options.timeoutMs);
  try {
    let current = url;
    for (let redirects = 0; ; redirects += 1) {
      // The target's address is checked here on every hop; through a proxy the socket goes to the proxy
      // (allowed wherever it is: the operator chose it), so the connect-time check is the proxy's own.
      await addresses.refuseForbidden(current);
      if (deadline.signal.aborted) throw deadline.signal.reason;
      const response = await request(current, {
        method: "GET",
        dispatcher: proxyDispatcherFor(current) ?? agent,
        signal: deadline.signal,
        headers: {
          "user-agent": options.userAgent ?? DEFAULT_USER_AGENT,
          accept: "*/*",
          "accept-encoding": "gzip, deflate, br",
          // Lower-cased like ours, so that a rule's User-Agent or Accept replaces ours rather than going twice.
          ...Object.fromEntries(headerRules.for(current).map(([name, value]) => [name.toLowerCase(), value])),
        },
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
      }
      const raw = response.body as unknown as Readable;
      const location = headers.location;
      // Past the last redirect allowed, the redirect itself is the answer (robots.txt: "no rules").
      if (isRedirect(response.statusCode) && location && redirects < MAX_REDIRECTS) {
        // Not read: a redirect's body could drip on, holding its connection past this fetch's deadline.
        raw.on("error", () => undefined);
        raw.destroy();
        current = new URL(location, current).href;
        continue;
      }
      body = raw;
      raw.once("close", () => clearTimeout(timer));
      return { status: response.statusCode, headers, body: capped(decoded(raw, headers["content-encoding"]), options.maxBytes) };
    }
  } catch (err) {
    clearTimeout(timer);
    body?.destroy();
    throw deadline.signal.aborted ? deadline.signal.reason : err;
  }
}

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/** Read a whole (capped) body as UTF-8 text. */
export async function readText(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** Drop a body not wanted, so the connection is freed. */
export function discard(body: Readable): void {
  body.on("error", () => undefined);
  body.resume();
}

export { forward };

/** Fail the stream with BodyTooLargeError once more than `maxBytes` passed. */
export function capped(body: Readable, maxBytes: number): Readable {
  let seen = 0;
  const limiter = new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      seen += chunk.length;
      if (seen > maxBytes) {
        callback(new BodyTooLargeError(`body larger than ${maxBytes} bytes`));
        body.destroy();
        return;
      }
      callback(null, chunk);
    },
  });
  return forward(body, limiter);
}
