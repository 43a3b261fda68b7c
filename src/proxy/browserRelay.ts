import type dns from "node:dns";
import type { LookupFunction } from "node:net";
import { randomBytes } from "node:crypto";
import { logger } from "../log/logger.js";

/**
 * A proxy for Chromium on a loopback port, for what Chromium cannot do with one --proxy-server: proxies
 * chosen per URL (--proxyServerConfig) and SOCKS proxies that want a password. Each request (CONNECT
 * for https and wss) goes to the upstream `upstreamOf` names for it, or directly when it names none (then
 * resolved by the address policy's lookup, at connect time). It asks for credentials of its own (random,
 * given to Chromium through CDP Fetch.authRequired), so no other local program can use it, and refuses
 * targets the address policy refuses, whoever in Chromium asks (its own background requests too, which no
 * tab sees), with an answer of its own that no site gives. proxy-chain does the proxying. (Without a proxy, a
 * crawl's Chromium connects through fetch/socketGate.ts instead, which passes bytes as they are: proxy-chain
 * sends a plain-http response on re-serialised, HTTP/1.0 as 1.1, Date and Keep-Alive added.)
 */
export interface RelayRules {
  /** The upstream proxy URL (credentials included) of a target URL; null: connect directly. */
  upstreamOf: (url: string) => string | null;
  /** What the address policy says of the target (which leaves the name of a target sent to an upstream proxy to that proxy). */
  verdict?: (url: string) => Promise<TargetVerdict>;
  /** How the names of direct targets are resolved (the address policy's lookup: refused addresses are never connected to). */
  directLookup?: LookupFunction;
}

/** The address policy's verdict on a target (fetch/addressPolicy.ts's AddressVerdict: proxy/ sits below fetch/). */
export type TargetVerdict = { allowed: true } | { allowed: false; reason: string; unresolved?: true };

/**
 * The relay's own answers, in proxy-chain's 59x range (proxyFailure.ts) so that none passes for the site's:
 * a target the policy refuses, a direct target whose name does not resolve.
 */
export const RELAY_REFUSED_STATUS = 591;
export const RELAY_NOT_RESOLVED_STATUS = 593;

export interface BrowserRelay {
  /** http://127.0.0.1:<port> */
  url: string;
  host: string;
  port: number;
  username: string;
  password: string;
  close(): Promise<void>;
}

/**
 * proxy-chain answers a plain-http request whose direct target's lookup fails with ENOTFOUND with a bare
 * 404, which would pass for the site's answer: the lookup's failures reach it without that code (a 599).
 */
function withoutNotFoundCode(lookup: LookupFunction): LookupFunction {
  return (hostname, options, callback) =>
    lookup(hostname, options, (err, address, family) => {
      if (err && err.code === "ENOTFOUND") err.code = "ENAMENOTRESOLVED";
      callback(err, address, family);
    });
}

export async function startBrowserRelay(rules: RelayRules): Promise<BrowserRelay> {
  // Loaded when a relay is needed (0.1 s of CPU a crawl without one need not spend at its start).
  const { RequestError, Server } = await import("proxy-chain");
  const { upstreamOf, verdict, directLookup } = rules;
  const lookup = directLookup ? withoutNotFoundCode(directLookup) : undefined;
  const username = "crawler";
  const password = randomBytes(18).toString("base64url");
  const server = new Server({
    port: 0,
    host: "127.0.0.1",
    prepareRequestFunction: async ({ username: user, password: pass, hostname, port, isHttp, request }) => {
      if (user !== username || pass !== password) return { requestAuthentication: true };
      // A CONNECT names only host and port: Chromium sends https (and wss) that way.
      const target = isHttp ? (request.url ?? "") : `https://${hostname.includes(":") ? `[${hostname}]` : hostname}${port === 443 ? "" : `:${port}`}/`;
      const upstreamProxyUrl = upstreamOf(target);
      const judged = verdict ? await verdict(target) : { allowed: true as const };
      if (!judged.allowed) {
        // Requests no tab paused get here (WebSockets, service workers, Chromium's own), and any a tab let through.
        const message = judged.unresolved ? "connection refused: its host name does not resolve" : "connection refused: not an address the crawler may fetch";
        logger.warn("proxy", message, { host: hostname, port, reason: judged.reason });
        throw new RequestError(`not fetched: ${judged.reason}`, judged.unresolved ? RELAY_NOT_RESOLVED_STATUS : RELAY_REFUSED_STATUS);
      }
      return upstreamProxyUrl ? { upstreamProxyUrl } : { upstreamProxyUrl: null, ...(lookup ? { dnsLookup: lookup as unknown as typeof dns.lookup } : {}) };
    },
  });
  server.on("requestFailed", ({ error, request }: { error: Error; request: { url?: string } }) => {
    // Messages may name the upstream proxy: never with its credentials.
    logger.debug("proxy", "relayed request failed", { url: request.url ?? null, error: error.message.replace(/\/\/[^/@\s]*@/g, "//") });
  });
  await server.listen();
  const port = server.port;
  return {
    url: `http://127.0.0.1:${port}`,
    host: "127.0.0.1",
    port,
    username,
    password,
    close: () => server.close(true),
  };
}
