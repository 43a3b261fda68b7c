import { readFileSync } from "node:fs";
import { load } from "js-yaml";

/**
 * Which proxies a crawler process uses, from browsertrix-crawler's flags and environment: `--proxyServer`
 * (else PROXY_SERVER, else PROXY_HOST + PROXY_PORT), `--proxyServerConfig` (per-host proxies, its YAML),
 * `--proxyServerPreferSingleProxy`, `--sshProxyPrivateKeyFile`, `--sshProxyKnownHostsFile`. Pure parsing:
 * nothing is started or connected here (activeProxies.ts does that).
 */
export type ProxyKind = "http" | "https" | "socks4" | "socks5" | "ssh";

export interface ProxyDef {
  /** The name in --proxyServerConfig's `proxies:`, or `proxyServer` for the single proxy. */
  name: string;
  kind: ProxyKind;
  /** Host name or IP address (IPv6 without brackets). */
  host: string;
  port: number;
  username: string;
  password: string;
  /** ssh:// only: the key given to ssh -i, and the known_hosts file (none: the host key is not checked). */
  privateKeyFile: string | null;
  knownHostsFile: string | null;
  /** ssh:// in --proxyServerConfig: a tunnel that cannot be set up leaves its hosts direct instead of failing the crawl. */
  ignoreOnFailedSSHTunnel: boolean;
}

/** A --proxyServerConfig `matchHosts` entry: URLs the regex matches go through `proxy`. */
export interface ProxyRoute {
  pattern: RegExp;
  proxy: ProxyDef;
}

export interface ProxySettings {
  /** matchHosts rules, in file order: the last one that matches a URL wins (as in browsertrix-crawler). */
  routes: ProxyRoute[];
  /** The proxy of URLs no rule matches; null: they are fetched directly. */
  fallback: ProxyDef | null;
}

export interface RawProxyFlags {
  proxyServer?: string;
  proxyServerConfig?: string;
  proxyServerPreferSingleProxy?: boolean;
  sshProxyPrivateKeyFile?: string;
  sshProxyKnownHostsFile?: string;
}

/** A proxy flag or file that cannot be used: bad input (exit 4). */
export class ProxyConfigError extends Error {}

const DEFAULT_PORTS: Record<ProxyKind, number> = { http: 80, https: 443, socks4: 1080, socks5: 1080, ssh: 22 };

/** The proxy URL of the whole process: --proxyServer, else PROXY_SERVER, else PROXY_HOST:PROXY_PORT (browsertrix-crawler 0.x). */
export function singleProxyUrl(flags: RawProxyFlags, env: NodeJS.ProcessEnv): string | null {
  if (flags.proxyServer) return flags.proxyServer;
  if (env.PROXY_SERVER) return env.PROXY_SERVER;
  if (env.PROXY_HOST && env.PROXY_PORT) return `http://${env.PROXY_HOST}:${env.PROXY_PORT}`;
  return null;
}

/** The proxies of this process; null when none is set. */
export function proxySettings(flags: RawProxyFlags, env: NodeJS.ProcessEnv = process.env): ProxySettings | null {
  const sshFiles = { privateKeyFile: flags.sshProxyPrivateKeyFile ?? null, knownHostsFile: flags.sshProxyKnownHostsFile ?? null };
  const singleUrl = singleProxyUrl(flags, env);
  const single = singleUrl ? parseProxyUrl(singleUrl, "proxyServer", sshFiles) : null;
  const config = flags.proxyServerConfig ? readProxyConfig(flags.proxyServerConfig, sshFiles) : null;
  if (!config || (single && flags.proxyServerPreferSingleProxy)) return single ? { routes: [], fallback: single } : null;
  const settings: ProxySettings = { routes: config.routes, fallback: config.fallback ?? single };
  return settings.routes.length || settings.fallback ? settings : null;
}

/** A proxy URL: http://, https://, socks5:// (socks:// too), socks4:// or ssh://, with user:password@ if needed. */
export function parseProxyUrl(text: string, name: string, sshFiles: { privateKeyFile: string | null; knownHostsFile: string | null }, ignoreOnFailedSSHTunnel = false): ProxyDef {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new ProxyConfigError(`${what(name)} is not a URL: ${JSON.stringify(safeProxyString(text))}`);
  }
  const scheme = url.protocol.replace(/:$/, "").toLowerCase();
  // browsertrix-crawler's Node side reads socks:// as SOCKS5.
  const kind = (scheme === "socks" ? "socks5" : scheme) as ProxyKind;
  if (!(kind in DEFAULT_PORTS)) {
    throw new ProxyConfigError(`${what(name)} must be an http://, https://, socks5://, socks4:// or ssh:// URL, got ${JSON.stringify(safeProxyString(text))}`);
  }
  if (!url.hostname) throw new ProxyConfigError(`${what(name)} has no host: ${JSON.stringify(safeProxyString(text))}`);
  const ssh = kind === "ssh";
  return {
    name,
    kind,
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : DEFAULT_PORTS[kind],
    // browsertrix-crawler logs in as root when an ssh:// URL names no user.
    username: decodeURIComponent(url.username) || (ssh ? "root" : ""),
    password: decodeURIComponent(url.password),
    privateKeyFile: ssh ? sshFiles.privateKeyFile : null,
    knownHostsFile: ssh ? sshFiles.knownHostsFile : null,
    ignoreOnFailedSSHTunnel: ssh && ignoreOnFailedSSHTunnel,
  };
}

function what(name: string): string {
  return name === "proxyServer" ? "--proxyServer (or PROXY_SERVER)" : `proxy ${JSON.stringify(name)} of --proxyServerConfig`;
}

/** A proxy URL without its credentials, for messages and logs. */
export function safeProxyString(text: string): string {
  try {
    const url = new URL(text);
    url.username = "";
    url.password = "";
    return url.href.replace(/\/$/, "");
  } catch {
    return text.replace(/\/\/[^@/]*@/, "//");
  }
}

/** The proxy as a URL without credentials (ssh:// keeps its user: it is no secret and says who logs in). */
export function proxyLabel(proxy: ProxyDef): string {
  const host = proxy.host.includes(":") ? `[${proxy.host}]` : proxy.host;
  return `${proxy.kind}://${proxy.kind === "ssh" ? `${proxy.username}@` : ""}${host}:${proxy.port}`;
}

interface RawProxyConfig {
  matchHosts?: unknown;
  proxies?: unknown;
}

/** browsertrix-crawler's --proxyServerConfig YAML (or JSON): `matchHosts: {regex: name}`, `proxies: {name: url | {url, ...}}`. */
function readProxyConfig(file: string, sshFiles: { privateKeyFile: string | null; knownHostsFile: string | null }): { routes: ProxyRoute[]; fallback: ProxyDef | null } | null {
  let raw: RawProxyConfig;
  try {
    raw = (load(readFileSync(file, "utf8")) ?? {}) as RawProxyConfig;
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message.split("\n")[0];
    throw new ProxyConfigError(`--proxyServerConfig ${file} cannot be read: ${reason}`);
  }
  if (typeof raw !== "object" || Array.isArray(raw)) throw new ProxyConfigError(`--proxyServerConfig ${file}: expected a mapping with matchHosts and proxies`);
  // As in browsertrix-crawler, a file without both sections changes nothing.
  if (!isMapping(raw.matchHosts) || !isMapping(raw.proxies)) return null;
  const proxies = new Map<string, ProxyDef>();
  for (const [name, value] of Object.entries(raw.proxies)) {
    if (typeof value === "string") {
      proxies.set(name, parseProxyUrl(value, name, sshFiles));
      continue;
    }
    if (!isMapping(value) || typeof value.url !== "string") throw new ProxyConfigError(`--proxyServerConfig ${file}: proxy ${JSON.stringify(name)} needs a url`);
    const own = {
      privateKeyFile: typeof value.privateKeyFile === "string" ? value.privateKeyFile : sshFiles.privateKeyFile,
      knownHostsFile: typeof value.publicHostsFile === "string" ? value.publicHostsFile : sshFiles.knownHostsFile,
    };
    proxies.set(name, parseProxyUrl(value.url, name, own, value.ignoreOnFailedSSHTunnel === true));
  }
  const routes: ProxyRoute[] = [];
  let fallback: ProxyDef | null = null;
  for (const [rule, name] of Object.entries(raw.matchHosts)) {
    const proxy = typeof name === "string" ? proxies.get(name) : undefined;
    if (!proxy) throw new ProxyConfigError(`--proxyServerConfig ${file}: matchHosts ${JSON.stringify(rule)} names ${JSON.stringify(name)}, which is not in proxies`);
    // An empty rule names the proxy of every URL no other rule matches.
    if (rule === "") {
      fallback = proxy;
      continue;
    }
    try {
      routes.push({ pattern: new RegExp(rule), proxy });
    } catch (err) {
      throw new ProxyConfigError(`--proxyServerConfig ${file}: matchHosts ${JSON.stringify(rule)} is not a regex: ${(err as Error).message}`);
    }
  }
  return { routes, fallback };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * What a URL is matched against: the URL itself, but only `https://host[:port]/` for https URLs, which is
 * all Chromium shows a proxy choice (and a proxy sees of them: the rest travels encrypted). So a URL goes
 * through the same proxy whether the browser or the crawler itself fetches it.
 */
export function routingKey(url: string): string {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "wss:" ? `${parsed.protocol}//${parsed.host}/` : parsed.href;
  } catch {
    return url;
  }
}

/** The proxy `url` goes through (the last matching rule's, else the fallback); null: fetched directly. */
export function proxyOf(settings: ProxySettings, url: string): ProxyDef | null {
  const key = routingKey(url);
  let chosen: ProxyDef | null = null;
  for (const route of settings.routes) if (route.pattern.test(key)) chosen = route.proxy;
  return chosen ?? settings.fallback;
}

/** Every proxy the settings can send a URL to, each once. */
export function proxiesInUse(settings: ProxySettings): ProxyDef[] {
  return [...new Set([...settings.routes.map((r) => r.proxy), ...(settings.fallback ? [settings.fallback] : [])])];
}
