import type { LookupAddress, LookupOptions } from "node:dns";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { withTimeout } from "../util/deadline.js";
import { testSeams } from "../util/testSeams.js";
import { goesThroughProxy } from "../proxy/activeProxies.js";
import { ADDRESS_CATEGORIES, AddressRange, categoryOf, METADATA_HOST_NAMES, type AddressCategory } from "./addressRanges.js";

/**
 * Which addresses the crawler may connect to, for the browser (checked as each request, redirect hops
 * included, is about to be sent, and again when its connection is opened: socketGate.ts, or with
 * --proxyServerConfig proxy/browserRelay.ts, resolve through this policy, so Chromium connects to exactly
 * what was approved) and for its own fetches alike. A name that does not resolve is refused. Public addresses always; loopback and
 * private ones only when a seed is on one (a local site keeps working, a public site cannot reach into
 * the crawler's network); link-local and cloud metadata addresses (and names) never, unless
 * --allowAddresses says so. Addresses are checked after DNS resolution: every address a name resolves
 * to must be allowed. A URL fetched through a proxy is the exception: the proxy resolves its name, so
 * only what is known without DNS is checked here (IP literals, localhost, metadata names) and any other
 * name is allowed, whether this machine could resolve it or not.
 */
export type AddressVerdict = { allowed: true } | { allowed: false; reason: string; unresolved?: true };

export class AddressRefusedError extends Error {}

/** Whether a URL is fetched through a proxy (by default the running proxies' choice, proxy/activeProxies.ts). */
export type ProxiedUrls = (url: string) => boolean;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** What --allowAddresses allows beyond the defaults. */
export interface AddressAllowance {
  categories: AddressCategory[];
  /** IP ranges (CIDR or single addresses) allowed whatever their category. */
  ranges: string[];
}

/** Categories that --allowAddresses may name (public is always allowed). */
export const ALLOWABLE_CATEGORIES = ADDRESS_CATEGORIES.filter((c) => c !== "public");

/** Parse --allowAddresses values: categories (loopback, private, link-local, metadata...) and IP ranges. */
export function parseAddressAllowance(values: string[]): AddressAllowance {
  const allowance: AddressAllowance = { categories: [], ranges: [] };
  for (const value of values) {
    if ((ALLOWABLE_CATEGORIES as readonly string[]).includes(value)) {
      allowance.categories.push(value as AddressCategory);
      continue;
    }
    try {
      allowance.ranges.push(new AddressRange(value).text);
    } catch {
      throw new Error(`takes IP ranges (10.1.0.0/16, fd00::/8, 169.254.169.254) or ${ALLOWABLE_CATEGORIES.join(", ")}; got ${JSON.stringify(value)}`);
    }
  }
  return allowance;
}

/** Test seam (TestSeams.hostPairs): names resolved to loopback addresses here and in Chromium. */
function testHostMap(): Map<string, string> {
  const map = new Map<string, string>();
  for (const pair of testSeams().hostPairs()) {
    const [name, address] = pair.split("=").map((s) => s.trim());
    if (name && address && isIP(address)) map.set(name.toLowerCase(), address);
  }
  return map;
}

/** Test seam (TestSeams.linkLocalRanges): these (loopback) ranges count as link-local. */
function testLinkLocalRanges(): AddressRange[] {
  return testSeams().linkLocalRanges().map((s) => new AddressRange(s));
}

/**
 * Test seam (TestSeams.dnsForbidden, on for the whole test suite): no name is ever asked of DNS; names not
 * mapped by the test host names and not localhost do not resolve, and are not fetched. Says why.
 */
function dnsForbiddenForTests(): string | undefined {
  return testSeams().dnsForbidden();
}

/** Chromium flags that make it resolve the test host names as the policy does. */
export function chromiumHostResolverArgs(): string[] {
  const rules = [...testHostMap()].map(([name, address]) => `MAP ${name} ${address}`);
  return rules.length ? [`--host-resolver-rules=${rules.join(", ")}`] : [];
}

const LOOKUP_DEADLINE_MS = 5000;
const CACHE_TTL_MS = 60_000;
const CACHE_MAX_HOSTS = 4096;

/** Name resolution for the policy, cached briefly and bounded; a name that does not resolve gives []. */
class HostResolver {
  private readonly cache = new Map<string, { addresses: Promise<string[]>; expires: number }>();
  private readonly hostMap = testHostMap();

  resolve(host: string): Promise<string[]> {
    const known = knownWithoutDns(host);
    if (known) return Promise.resolve(known);
    const mapped = this.hostMap.get(host);
    if (mapped) return Promise.resolve([mapped]);
    if (dnsForbiddenForTests()) return Promise.resolve([]);
    const cached = this.cache.get(host);
    if (cached && cached.expires > Date.now()) return cached.addresses;
    const addresses = withTimeout(lookup(host, { all: true, verbatim: true }), LOOKUP_DEADLINE_MS, "lookup timed out")
      .then((found) => found.map((a) => a.address))
      .catch(() => []);
    this.cache.delete(host);
    if (this.cache.size >= CACHE_MAX_HOSTS) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(host, { addresses, expires: Date.now() + CACHE_TTL_MS });
    return addresses;
  }
}

/**
 * The addresses of a host that no resolver is asked for: an IP literal's own, and (RFC 6761) loopback for
 * localhost and its subdomains, answered here as Chromium does. null: only a resolver can tell.
 */
function knownWithoutDns(host: string): string[] | null {
  if (isIP(host)) return [host];
  if (host === "localhost" || host.endsWith(".localhost")) return ["127.0.0.1", "::1"];
  return null;
}

export class AddressPolicy {
  private readonly allowedCategories: Set<AddressCategory>;
  private readonly allowedRanges: AddressRange[];
  private readonly linkLocalForTests = testLinkLocalRanges();

  constructor(allowance: AddressAllowance, private readonly proxied: ProxiedUrls = goesThroughProxy, private readonly resolver = new HostResolver()) {
    this.allowedCategories = new Set(["public", ...allowance.categories]);
    this.allowedRanges = allowance.ranges.map((r) => new AddressRange(r));
  }

  /**
   * The policy outside a crawl (the tools, and what the options point at before the seeds are known):
   * loopback and private addresses are allowed (a local server), link-local and metadata addresses are not.
   */
  static outsideACrawl(proxied: ProxiedUrls = goesThroughProxy): AddressPolicy {
    return new AddressPolicy({ categories: ["loopback", "private"], ranges: [] }, proxied);
  }

  /**
   * The policy of a crawl: --allowAddresses, plus loopback or private addresses when a seed resolves
   * to one (a seed through a proxy counts only by an IP literal or localhost: its name is not resolved
   * here). A seed on an address that stays refused is bad input (thrown, with the way out).
   */
  static async forSeeds(seeds: string[], allowance: AddressAllowance, proxied: ProxiedUrls = goesThroughProxy): Promise<AddressPolicy> {
    const resolver = new HostResolver();
    const categories = new Set(allowance.categories);
    const probe = new AddressPolicy(allowance, proxied, resolver);
    for (const seed of seeds) {
      for (const address of (await probe.addressesOf(seed)) ?? []) {
        const category = probe.categoryOf(address);
        if (category === "loopback" || category === "private") categories.add(category);
      }
    }
    const policy = new AddressPolicy({ categories: [...categories], ranges: allowance.ranges }, proxied, resolver);
    for (const seed of seeds) {
      const verdict = await policy.check(seed);
      // A seed whose name does not resolve is no address question: its page fails when loaded (and is retried).
      if (!verdict.allowed && !verdict.unresolved) throw new AddressRefusedError(`seed ${seed} is not crawled: ${verdict.reason} (--allowAddresses can allow it)`);
    }
    return policy;
  }

  async check(url: string): Promise<AddressVerdict> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { allowed: false, reason: "not a valid URL" };
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return { allowed: false, reason: `${parsed.protocol} URLs are never fetched` };
    const host = resolverHostOf(parsed);
    if (METADATA_HOST_NAMES.has(host) && !this.allowedCategories.has("metadata")) {
      return { allowed: false, reason: `${host} is a cloud metadata service` };
    }
    const addresses = await this.addressesOf(url);
    // Through a proxy, a name is the proxy's to resolve (and to refuse, if it resolves to a private address).
    if (addresses === null) return { allowed: true };
    // A name that does not resolve is refused: nothing else (Chromium's own resolver) may find an address for it.
    const unresolvedInTests = addresses.length ? undefined : dnsForbiddenForTests();
    if (unresolvedInTests) return { allowed: false, reason: `${host} is ${unresolvedInTests}` };
    if (!addresses.length) return { allowed: false, reason: `${host} does not resolve`, unresolved: true };
    for (const address of addresses) {
      const verdict = this.judge(host, address);
      if (!verdict.allowed) return verdict;
    }
    return { allowed: true };
  }

  /**
   * The addresses `url`'s host is judged by. Through a proxy, which resolves names itself, only those
   * known without DNS: this machine may have no DNS of its own (the proxy its only way out), and asking
   * would tell DNS every host of a crawl that was to go through the proxy. null: a name left to the proxy.
   */
  private async addressesOf(url: string): Promise<string[] | null> {
    const host = resolverHostOf(new URL(url));
    if (this.proxied(url)) return knownWithoutDns(host);
    return this.resolver.resolve(host);
  }

  /**
   * The addresses a socket to `host` may connect to: every one it resolves to, all allowed (else
   * AddressRefusedError); checked at connect time, so a name that resolves differently by then is caught.
   */
  async resolveAllowed(host: string): Promise<string[]> {
    const name = host.toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
    const addresses = await this.resolver.resolve(name);
    if (!addresses.length) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
    for (const address of addresses) {
      const verdict = this.judge(name, address);
      if (!verdict.allowed) throw new AddressRefusedError(`not fetched: ${verdict.reason}`);
    }
    return addresses;
  }

  /** Throws AddressRefusedError when the crawler may not fetch `url`. */
  async refuseForbidden(url: string): Promise<void> {
    const verdict = await this.check(url);
    if (!verdict.allowed) throw new AddressRefusedError(`not fetched: ${verdict.reason}`);
  }

  /**
   * A `lookup` for the crawler's own sockets (undici's connect option): names resolve as the policy
   * resolves them, and a socket is never opened to an address the policy refuses.
   */
  readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    this.resolveAllowed(hostname).then(
      (addresses) => {
        const found = addresses.map((address) => ({ address, family: isIP(address) }));
        const wanted = options.family === 4 || options.family === 6 ? found.filter((a) => a.family === options.family) : found;
        if (!wanted.length) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), "");
        if (options.all) callback(null, wanted);
        else callback(null, wanted[0].address, wanted[0].family);
      },
      (err: Error) => callback(err, ""),
    );
  };

  private judge(host: string, address: string): AddressVerdict {
    if (this.allowedRanges.some((range) => range.contains(address))) return { allowed: true };
    const category = this.categoryOf(address);
    if (this.allowedCategories.has(category)) return { allowed: true };
    return { allowed: false, reason: `${host === address ? address : `${host} resolves to ${address}`}, a ${category} address` };
  }

  private categoryOf(address: string): AddressCategory {
    return this.linkLocalForTests.some((range) => range.contains(address)) ? "link-local" : categoryOf(address);
  }
}

/** The host of a URL as a resolver takes it: lower case, no brackets around IPv6, no trailing dot. */
function resolverHostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
}

