import { createRequire } from "node:module";
import { ProxyAgent, type Dispatcher } from "undici";
import type { ProxyDef } from "./proxySettings.js";

/** Where a proxy is reached from this process: itself, or for ssh:// the local SOCKS5 port of its tunnel. */
export interface ProxyEndpoint {
  kind: "http" | "https" | "socks4" | "socks5";
  host: string;
  port: number;
  username: string;
  password: string;
}

export function endpointOf(proxy: ProxyDef, tunnelPort: number | null): ProxyEndpoint {
  if (proxy.kind === "ssh") return { kind: "socks5", host: "127.0.0.1", port: tunnelPort ?? 0, username: "", password: "" };
  return { kind: proxy.kind, host: proxy.host, port: proxy.port, username: proxy.username, password: proxy.password };
}

/** The endpoint as a URL, credentials included (for proxy-chain and git), or without them. */
export function endpointUrl(endpoint: ProxyEndpoint, withCredentials: boolean): string {
  const host = endpoint.host.includes(":") ? `[${endpoint.host}]` : endpoint.host;
  const credentials = withCredentials && (endpoint.username || endpoint.password)
    ? `${encodeURIComponent(endpoint.username)}:${encodeURIComponent(endpoint.password)}@`
    : "";
  return `${endpoint.kind}://${credentials}${host}:${endpoint.port}`;
}

/**
 * The endpoint as a URL (credentials included) for clients that read the scheme as where names are
 * resolved (proxy-chain's SOCKS upstreams, curl): socks5h:// and socks4a://, so that the proxy resolves
 * each host name, never this machine.
 */
export function remoteResolvingUrl(endpoint: ProxyEndpoint): string {
  return endpointUrl(endpoint, true).replace(/^socks5:/, "socks5h:").replace(/^socks4:/, "socks4a:");
}

/**
 * The undici dispatcher of the crawler's own fetches through a proxy: undici's ProxyAgent for http(s)
 * proxies (http:// URLs are sent to it as absolute-URI requests, as Chromium does, https:// ones through a
 * CONNECT tunnel; Basic credentials in Proxy-Authorization), fetch-socks for SOCKS (the proxy resolves
 * the names).
 */
export function proxyDispatcher(endpoint: ProxyEndpoint): Dispatcher {
  if (endpoint.kind === "http" || endpoint.kind === "https") {
    const token = endpoint.username || endpoint.password ? `Basic ${Buffer.from(`${endpoint.username}:${endpoint.password}`).toString("base64")}` : undefined;
    return new ProxyAgent({ uri: endpointUrl(endpoint, false), proxyTunnel: false, ...(token ? { token } : {}) });
  }
  // Loaded on first use: a crawl without a SOCKS proxy does not pay for it at start-up.
  const { socksDispatcher } = createRequire(import.meta.url)("fetch-socks") as typeof import("fetch-socks");
  return socksDispatcher({
    type: endpoint.kind === "socks4" ? 4 : 5,
    host: endpoint.host,
    port: endpoint.port,
    ...(endpoint.username ? { userId: endpoint.username } : {}),
    ...(endpoint.password ? { password: endpoint.password } : {}),
  });
}
