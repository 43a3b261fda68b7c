import type dns from "node:dns";
import type { LookupFunction } from "node:net";
import { randomBytes } from "node:crypto";
import { logger } from "../log/logger.js";

/**
 * A proxy for Chromium on a loopback port, for what Chromium cannot do with one --proxy-server: proxies
 * chosen per URL (--proxyServerConfig) and SOCKS proxies that want a password. Each request (CONNECT
 * for https) goes to the upstream `upstreamOf` names for it, or directly when it names none. It asks
 * for credentials of its own (random, given to Chromium through CDP Fetch.authRequired), so no other
 * local program can use it, and refuses targets the address policy refuses, whoever in Chromium asks
 * (its own background requests too, which no tab sees). proxy-chain does the proxying.
 */
export interface RelayRules {
  /** The upstream proxy URL (credentials included) of a target URL; null: connect directly. */
  upstreamOf: (url: string) => string | null;
  /** Whether the target may be fetched at all (the address policy); refused ones get a 403. */
  allowed?: (url: string) => Promise<boolean>;
  /** How the names of direct targets are resolved (the address policy's lookup: refused addresses are never connected to). */
  directLookup?: LookupFunction;
}

export interface BrowserRelay {
  /** http://127.0.0.1:<port> */
  url: string;
  host: string;
  port: number;
  username: string;
  password: string;
  close(): Promise<void>;
}

export async function startBrowserRelay(rules: RelayRules): Promise<BrowserRelay> {
  // Loaded when a relay is needed (0.1 s of CPU a crawl without one need not spend at its start).
  const { RequestError, Server } = await import("proxy-chain");
  const { upstreamOf, allowed, directLookup } = rules;
  const username = "crawler";
  const password = randomBytes(18).toString("base64url");
  const server = new Server({
    port: 0,
    host: "127.0.0.1",
    prepareRequestFunction: async ({ username: user, password: pass, hostname, port, isHttp, request }) => {
      if (user !== username || pass !== password) return { requestAuthentication: true };
      // A CONNECT names only host and port: Chromium sends https (and wss) that way.
      const target = isHttp ? (request.url ?? "") : `https://${hostname.includes(":") ? `[${hostname}]` : hostname}${port === 443 ? "" : `:${port}`}/`;
      if (allowed && !(await allowed(target))) throw new RequestError(`not fetched: ${target} is not an address the crawler may fetch`, 403);
      const upstreamProxyUrl = upstreamOf(target);
      return upstreamProxyUrl ? { upstreamProxyUrl } : { upstreamProxyUrl: null, ...(directLookup ? { dnsLookup: directLookup as unknown as typeof dns.lookup } : {}) };
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
