import { connect } from "node:net";
import type { LookupFunction } from "node:net";
import { Client, request, type Dispatcher } from "undici";
import { errorMessage, logger } from "../log/logger.js";
import { startBrowserRelay, type BrowserRelay, type TargetVerdict } from "./browserRelay.js";
import { endpointOf, endpointUrl, proxyDispatcher, remoteResolvingUrl, type ProxyEndpoint } from "./proxyDispatchers.js";
import { proxiesInUse, proxyLabel, proxyOf, type ProxyDef, type ProxySettings } from "./proxySettings.js";
import { openSshTunnel, type SshTunnel } from "./sshTunnel.js";

/**
 * The proxies of this process, once started: ssh tunnels open, each proxy checked reachable, one undici
 * dispatcher per proxy for the crawler's own fetches, and what Chromium is given (a --proxy-server, or the
 * relay of browserRelay.ts, and the credentials it answers proxy challenges with). Process-wide: the
 * tunnels and the relay are the process's own resources, started once before anything is fetched (the
 * seed file, the behaviors) and stopped when the command ends; every fetch of the process asks here which
 * way a URL goes. The address policy the relay applies is handed in (TargetPolicy).
 */

/** A proxy that cannot be used at the start: not reachable, its ssh tunnel not opened, its credentials refused (exit 21). */
export class ProxyStartError extends Error {}

interface LiveProxy {
  endpoint: ProxyEndpoint;
  dispatcher: Dispatcher;
}

interface Credentials {
  username: string;
  password: string;
}

interface Active {
  settings: ProxySettings;
  /** Each proxy in use; null: an ssh tunnel that failed with ignoreOnFailedSSHTunnel, its URLs go direct. */
  live: Map<ProxyDef, LiveProxy | null>;
  tunnels: SshTunnel[];
  relay: BrowserRelay | null;
  chromiumArgs: string[];
  /** Credentials Chromium gives a proxy that asks, by its host:port. */
  browserCredentials: Map<string, Credentials>;
}

let active: Active | null = null;

const CONNECT_CHECK_MS = 10_000;

/** The address policy, handed in (proxy/ sits below fetch/): the relay applies it to Chromium's targets. */
export interface TargetPolicy {
  verdict: (url: string) => Promise<TargetVerdict>;
  lookup: LookupFunction;
}

/**
 * Start the proxies of `settings` (none: every fetch is direct); with `relayAlways`, Chromium goes through
 * the loopback relay even to a single proxy it could be given directly (create-login-profile). Throws ProxyStartError, after
 * closing what it opened, when an ssh tunnel cannot be opened or a proxy does not accept connections.
 */
export async function startProxies(settings: ProxySettings | null, policy?: TargetPolicy, how: { relayAlways?: boolean } = {}): Promise<void> {
  await stopProxies();
  if (!settings) return;
  const state: Active = { settings, live: new Map(), tunnels: [], relay: null, chromiumArgs: [], browserCredentials: new Map() };
  try {
    for (const proxy of proxiesInUse(settings)) state.live.set(proxy, await startOne(proxy, state));
    const single = settings.routes.length === 0 ? settings.fallback : null;
    const singleLive = single ? state.live.get(single) : null;
    // relayAlways: Chromium then never holds the upstream's credentials at all, only the relay's own.
    // SOCKS4 carries addresses, not names: Chromium would resolve each name itself; the relay sends it as SOCKS4a.
    const needsRelay = how.relayAlways || !singleLive || singleLive.endpoint.kind === "socks4" || (singleLive.endpoint.kind === "socks5" && Boolean(singleLive.endpoint.username || singleLive.endpoint.password));
    let browserProxy: ProxyEndpoint;
    if (needsRelay) {
      state.relay = await startBrowserRelay({
        upstreamOf: (url) => {
          const live = liveFor(state, url);
          return live ? remoteResolvingUrl(live.endpoint) : null;
        },
        verdict: policy?.verdict,
        directLookup: policy?.lookup,
      });
      browserProxy = { kind: "http", host: state.relay.host, port: state.relay.port, username: state.relay.username, password: state.relay.password };
    } else {
      browserProxy = singleLive!.endpoint;
    }
    if (browserProxy.username || browserProxy.password) {
      state.browserCredentials.set(hostPort(browserProxy.host, browserProxy.port), { username: browserProxy.username, password: browserProxy.password });
    }
    // Chromium never sends loopback addresses to a proxy unless told so (<-loopback>).
    state.chromiumArgs = [`--proxy-server=${endpointUrl(browserProxy, false)}`, "--proxy-bypass-list=<-loopback>"];
    active = state;
  } catch (err) {
    await closeAll(state);
    throw err;
  }
  for (const [proxy, live] of state.live) {
    logger.info("proxy", live ? "using proxy" : "proxy left out: its URLs are fetched directly", { proxy: proxyLabel(proxy), name: proxy.name });
  }
}

async function startOne(proxy: ProxyDef, state: Active): Promise<LiveProxy | null> {
  let endpoint: ProxyEndpoint;
  if (proxy.kind === "ssh") {
    try {
      const tunnel = await openSshTunnel(proxy);
      state.tunnels.push(tunnel);
      endpoint = endpointOf(proxy, Number(new URL(tunnel.socksUrl).port));
    } catch (err) {
      if (proxy.ignoreOnFailedSSHTunnel) {
        logger.warn("proxy", "ssh tunnel failed; ignoreOnFailedSSHTunnel: its URLs are fetched directly", { proxy: proxyLabel(proxy), error: errorMessage(err) });
        return null;
      }
      throw new ProxyStartError(`proxy ${proxyLabel(proxy)} cannot be reached: the ssh tunnel failed: ${errorMessage(err)}`);
    }
  } else {
    endpoint = endpointOf(proxy, null);
    const failure = await connectFailure(endpoint.host, endpoint.port);
    if (failure) throw new ProxyStartError(`proxy ${proxyLabel(proxy)} cannot be reached: ${failure}`);
  }
  return { endpoint, dispatcher: proxyDispatcher(endpoint) };
}

/** Why a TCP connection to host:port fails (null: it connects), within 10 s. */
function connectFailure(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`no connection within ${CONNECT_CHECK_MS / 1000}s`);
    }, CONNECT_CHECK_MS);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(null);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      resolve(errorMessage(err));
    });
  });
}

function liveFor(state: Active, url: string): LiveProxy | null {
  const proxy = proxyOf(state.settings, url);
  return proxy ? (state.live.get(proxy) ?? null) : null;
}

function hostPort(host: string, port: number): string {
  return `${host.replace(/^\[(.*)\]$/, "$1").toLowerCase()}:${port}`;
}

/**
 * Each proxy that takes credentials, tried once with them before the crawl, towards the first seed it
 * serves: an http(s) proxy is asked for a CONNECT tunnel to the seed's host and port (its answer is its
 * own, never the site's; the tunnel is closed unused), a SOCKS proxy for a HEAD of the seed host's
 * /robots.txt. Credentials refused (HTTP 407, or 401 as tinyproxy says it; a SOCKS login refused) throw
 * ProxyStartError; anything else is left to the crawl (the site may be down, not the proxy).
 */
export async function checkProxyCredentials(seeds: string[]): Promise<void> {
  const state = active;
  if (!state) return;
  const checked = new Set<LiveProxy>();
  for (const seed of seeds) {
    const proxy = proxyOf(state.settings, seed);
    const live = proxy ? state.live.get(proxy) : null;
    if (!proxy || !live || checked.has(live) || !(live.endpoint.username || live.endpoint.password)) continue;
    checked.add(live);
    const refusal = await credentialsRefused(live, new URL(seed)).catch((err: unknown) => {
      logger.debug("proxy", "the credentials check through the proxy got no answer", { proxy: proxyLabel(proxy), error: errorMessage(err) });
      return null;
    });
    if (refusal) throw new ProxyStartError(`proxy ${proxyLabel(proxy)} refused the credentials given for it (${refusal})`);
  }
}

async function credentialsRefused(live: LiveProxy, seed: URL): Promise<string | null> {
  const { endpoint } = live;
  const signal = AbortSignal.timeout(CONNECT_CHECK_MS);
  if (endpoint.kind === "http" || endpoint.kind === "https") {
    const client = new Client(endpointUrl(endpoint, false), { connectTimeout: CONNECT_CHECK_MS });
    try {
      const port = seed.port || (seed.protocol === "https:" ? "443" : "80");
      const authorization = `Basic ${Buffer.from(`${endpoint.username}:${endpoint.password}`).toString("base64")}`;
      const { statusCode, socket } = await client.connect({ path: `${seed.hostname}:${port}`, headers: { "proxy-authorization": authorization }, signal });
      socket.destroy();
      return statusCode === 407 || statusCode === 401 ? `HTTP ${statusCode}` : null;
    } finally {
      await client.destroy().catch(() => undefined);
    }
  }
  try {
    const response = await request(new URL("/robots.txt", seed).href, { method: "HEAD", dispatcher: live.dispatcher, signal, headersTimeout: CONNECT_CHECK_MS });
    response.body.resume();
    return null;
  } catch (err) {
    if (/authentication failed/i.test(errorMessage(err))) return errorMessage(err);
    throw err;
  }
}

/** The dispatcher of a fetch of `url` outside the browser; null: fetched directly. */
export function proxyDispatcherFor(url: string): Dispatcher | null {
  return active ? (liveFor(active, url)?.dispatcher ?? null) : null;
}

/** Whether Chromium goes through our loopback relay (browserRelay.ts), whose failures are answers with a 59x status. */
export function relayInUse(): boolean {
  return active?.relay != null;
}

/** Whether Chromium's request for `url` goes through the relay and from there directly to the site (--proxyServerConfig). */
export function relayedDirectly(url: string): boolean {
  return active?.relay != null && liveFor(active, url) === null;
}

/**
 * Whether `url` is fetched through a proxy, by Chromium and the crawler's own fetches alike (the same
 * choice as proxyDispatcherFor's and the relay's): then the proxy resolves its host name, not this machine.
 */
export function goesThroughProxy(url: string): boolean {
  return active !== null && liveFor(active, url) !== null;
}

/** Whether the crawl fetches through a proxy at all. */
export function proxyInUse(): boolean {
  return active !== null;
}

/** Chromium's proxy switches (none without a proxy). */
export function chromiumProxyArgs(): string[] {
  return active ? [...active.chromiumArgs] : [];
}

/** Whether Chromium's proxy asks for credentials (then capture/requests/proxyAuth.ts answers its challenges). */
export function browserProxyNeedsCredentials(): boolean {
  return (active?.browserCredentials.size ?? 0) > 0;
}

/** The credentials for a proxy challenge from `origin` (the proxy's scheme://host:port), if we have them. */
export function browserProxyCredentials(origin: string): Credentials | null {
  if (!active || !active.browserCredentials.size) return null;
  try {
    const url = new URL(origin.includes("://") ? origin : `http://${origin}`);
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    return active.browserCredentials.get(hostPort(url.hostname, port)) ?? null;
  } catch {
    return null;
  }
}

/**
 * git's environment for a clone of `url` (--customBehaviors git+...): its proxy as http.proxy (curl reads
 * socks5h:// too), through GIT_CONFIG_* so that no password shows in the process list.
 */
export function gitProxyEnv(url: string): Record<string, string> {
  const live = active ? liveFor(active, url) : null;
  if (!live) return {};
  return { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "http.proxy", GIT_CONFIG_VALUE_0: remoteResolvingUrl(live.endpoint) };
}

/** Close tunnels, relay and dispatchers. */
export async function stopProxies(): Promise<void> {
  const state = active;
  active = null;
  if (state) await closeAll(state);
}

async function closeAll(state: Active): Promise<void> {
  for (const tunnel of state.tunnels) tunnel.close();
  await state.relay?.close().catch(() => undefined);
  for (const live of state.live.values()) await live?.dispatcher.close().catch(() => undefined);
}
