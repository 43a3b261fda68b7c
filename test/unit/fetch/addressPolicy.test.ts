import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LookupAddress } from "node:dns";
import { AddressPolicy, AddressRefusedError, chromiumHostResolverArgs, parseAddressAllowance } from "../../../src/fetch/addressPolicy.js";
import { categoryOf, embeddedIpv4 } from "../../../src/fetch/addressRanges.js";
import { plainFetch } from "../../../src/fetch/plainFetch.js";
import { directFetch } from "../../../src/fetch/directFetch.js";
import { RobotsTxt } from "../../../src/robots/robotsTxt.js";
import { readSitemaps } from "../../../src/sitemap/sitemapReader.js";
import { RequestHeaders } from "../../../src/fetch/requestHeaders.js";
import type { ConnectionRules } from "../../../src/fetch/connectionRules.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { createServer as createTcpServer } from "node:net";
import { startProxies, stopProxies } from "../../../src/proxy/activeProxies.js";
import { parseProxyUrl } from "../../../src/proxy/proxySettings.js";

const NONE = { categories: [], ranges: [] };

describe("address categories", () => {
  it.each([
    ["169.254.169.254", "link-local"], ["169.254.0.1", "link-local"], ["fe80::1", "link-local"], ["febf::1", "link-local"],
    ["100.100.100.200", "metadata"], ["fd00:ec2::254", "metadata"],
    ["127.0.0.1", "loopback"], ["127.255.0.9", "loopback"], ["::1", "loopback"],
    ["10.1.2.3", "private"], ["172.16.0.1", "private"], ["172.31.255.255", "private"], ["192.168.1.1", "private"], ["100.64.0.1", "private"], ["fc00::1", "private"], ["fd12::1", "private"],
    ["0.0.0.0", "unspecified"], ["::", "unspecified"], ["224.0.0.1", "multicast"], ["255.255.255.255", "multicast"], ["ff02::1", "multicast"], ["240.0.0.1", "reserved"],
    ["172.32.0.1", "public"], ["8.8.8.8", "public"], ["100.128.0.1", "public"], ["2001:4860::8888", "public"], ["fec0::1", "public"],
    // IPv6 forms that reach an IPv4 address are judged by it.
    ["::ffff:169.254.169.254", "link-local"], ["::ffff:a9fe:a9fe", "link-local"], ["64:ff9b::a9fe:a9fe", "link-local"], ["::ffff:7f00:1", "loopback"], ["::a9fe:a9fe", "link-local"],
  ])("%s is %s", (address, category) => {
    expect(categoryOf(address)).toBe(category);
  });

  it("finds the IPv4 address an IPv6 one carries, and only then", () => {
    expect(embeddedIpv4("::ffff:10.0.0.1")).toBe("10.0.0.1");
    expect(embeddedIpv4("0:0:0:0:0:ffff:0a00:0001")).toBe("10.0.0.1");
    expect(embeddedIpv4("2001:db8::1")).toBeNull();
    expect(embeddedIpv4("::1")).toBeNull();
    expect(embeddedIpv4("10.0.0.1")).toBeNull();
  });
});

describe("--allowAddresses", () => {
  it("takes categories and IP ranges", () => {
    expect(parseAddressAllowance(["private", "169.254.169.254", "10.9.0.0/16", "fd00::/8"])).toEqual({ categories: ["private"], ranges: ["169.254.169.254", "10.9.0.0/16", "fd00::/8"] });
  });

  it.each(["public-ish", "10.0.0.0/33", "10.0.0.0/8/1", "fe80::/129", "10.0.0/8", "example.com"])("refuses %s", (value) => {
    expect(() => parseAddressAllowance([value])).toThrow(/takes IP ranges/);
  });
});

describe("the address policy", () => {
  it("never fetches link-local or metadata addresses, metadata names, or other schemes", async () => {
    const policy = await AddressPolicy.forSeeds(["http://93.184.216.34/"], NONE);
    for (const url of [
      "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://100.100.100.200/", "http://[fd00:ec2::254]/",
      "http://[::ffff:169.254.169.254]/", "http://2852039166/", "http://0x7f.1/", "http://0.0.0.0:8080/",
      "http://metadata.google.internal/computeMetadata/v1/", "http://METADATA.google.internal./x", "http://metadata/x",
      "file:///etc/passwd", "chrome://settings/", "javascript:alert(1)", "data:text/html,hi", "ftp://93.184.216.34/",
    ]) {
      expect((await policy.check(url)).allowed, url).toBe(false);
    }
    expect(await policy.check("http://93.184.216.34:8080/page")).toEqual({ allowed: true });
  });

  it("allows loopback or private addresses only when a seed is on one", async () => {
    const publicSeed = await AddressPolicy.forSeeds(["https://93.184.216.34/"], NONE);
    expect(await publicSeed.check("http://127.0.0.1:8080/")).toEqual({ allowed: false, reason: "127.0.0.1, a loopback address" });
    expect(await publicSeed.check("http://localhost:8080/")).toMatchObject({ allowed: false, reason: expect.stringMatching(/^localhost resolves to (127\.0\.0\.1|::1), a loopback address$/) });
    expect((await publicSeed.check("http://10.0.0.8/")).allowed).toBe(false);
    expect((await publicSeed.check("http://[fd12::1]/")).allowed).toBe(false);

    const loopbackSeed = await AddressPolicy.forSeeds(["http://127.0.0.1:4000/"], NONE);
    expect(await loopbackSeed.check("http://127.0.0.5:8080/")).toEqual({ allowed: true });
    expect(await loopbackSeed.check("http://[::1]:8080/")).toEqual({ allowed: true });
    expect((await loopbackSeed.check("http://192.168.0.10/")).allowed).toBe(false);
    expect((await loopbackSeed.check("http://169.254.169.254/")).allowed).toBe(false);

    const privateSeed = await AddressPolicy.forSeeds(["http://10.20.30.40/"], NONE);
    expect(await privateSeed.check("http://172.20.0.1/")).toEqual({ allowed: true });
    expect((await privateSeed.check("http://127.0.0.1/")).allowed).toBe(false);
  });

  it("--allowAddresses allows more, down to one metadata address", async () => {
    const policy = await AddressPolicy.forSeeds(["http://93.184.216.34/"], parseAddressAllowance(["169.254.169.254", "private"]));
    expect(await policy.check("http://169.254.169.254/")).toEqual({ allowed: true });
    expect((await policy.check("http://169.254.169.253/")).allowed).toBe(false);
    expect(await policy.check("http://192.168.7.7/")).toEqual({ allowed: true });
    expect((await policy.check("http://127.0.0.1/")).allowed).toBe(false);
    const metadata = await AddressPolicy.forSeeds(["http://93.184.216.34/"], parseAddressAllowance(["metadata", "link-local"]));
    // The metadata name is no longer refused as such; it is judged by what it resolves to, and the
    // suite never asks DNS (CRAWLER_TEST_NO_DNS), so here it resolves to nothing.
    expect(await metadata.check("http://metadata.google.internal/")).toEqual({ allowed: false, reason: "metadata.google.internal is not resolved in tests (CRAWLER_TEST_NO_DNS)" });
    expect(await metadata.check("http://[fe80::2]/")).toEqual({ allowed: true });
  });

  it("a seed on a refused address is bad input, with the way out in the message", async () => {
    await expect(AddressPolicy.forSeeds(["http://169.254.169.254/latest/"], NONE)).rejects.toThrow(
      new AddressRefusedError("seed http://169.254.169.254/latest/ is not crawled: 169.254.169.254, a link-local address (--allowAddresses can allow it)"),
    );
    await expect(AddressPolicy.forSeeds(["http://169.254.169.254/latest/"], parseAddressAllowance(["169.254.0.0/16"]))).resolves.toBeInstanceOf(AddressPolicy);
  });
});

describe("the address policy through a proxy", () => {
  const everyUrl = () => true;

  it("leaves a name to the proxy: allowed without being resolved here (the suite resolves no name: CRAWLER_TEST_NO_DNS)", async () => {
    const policy = await AddressPolicy.forSeeds(["http://seed.through-proxy.test/"], NONE, everyUrl);
    expect(await policy.check("http://seed.through-proxy.test/page")).toEqual({ allowed: true });
    expect(await policy.check("https://other.through-proxy.test:8443/x")).toEqual({ allowed: true });
    await expect(policy.refuseForbidden("http://another.through-proxy.test/robots.txt")).resolves.toBeUndefined();
  });

  it("still checks what is known without DNS: IP literals, localhost, metadata names, other schemes", async () => {
    const policy = await AddressPolicy.forSeeds(["http://seed.through-proxy.test/"], NONE, everyUrl);
    expect(await policy.check("http://10.0.0.5/")).toEqual({ allowed: false, reason: "10.0.0.5, a private address" });
    expect(await policy.check("http://127.0.0.1:8080/")).toEqual({ allowed: false, reason: "127.0.0.1, a loopback address" });
    expect(await policy.check("http://[::ffff:169.254.169.254]/")).toEqual({ allowed: false, reason: "::ffff:a9fe:a9fe, a link-local address" });
    expect(await policy.check("http://localhost:8080/")).toEqual({ allowed: false, reason: "localhost resolves to 127.0.0.1, a loopback address" });
    expect(await policy.check("http://app.localhost/")).toEqual({ allowed: false, reason: "app.localhost resolves to 127.0.0.1, a loopback address" });
    expect(await policy.check("http://metadata.google.internal/computeMetadata/v1/")).toEqual({ allowed: false, reason: "metadata.google.internal is a cloud metadata service" });
    expect(await policy.check("file:///etc/passwd")).toEqual({ allowed: false, reason: "file: URLs are never fetched" });
    expect(await policy.check("http://93.184.216.34/")).toEqual({ allowed: true });
  });

  it("a seed on a literal address still allows its category; a seed name adds none, and is no refused seed", async () => {
    const loopbackSeed = await AddressPolicy.forSeeds(["http://127.0.0.3:4000/"], NONE, everyUrl);
    expect(await loopbackSeed.check("http://127.0.0.9/")).toEqual({ allowed: true });
    expect(await loopbackSeed.check("http://192.168.0.10/")).toEqual({ allowed: false, reason: "192.168.0.10, a private address" });
    const namedSeed = await AddressPolicy.forSeeds(["http://seed.through-proxy.test/"], NONE, everyUrl);
    expect(await namedSeed.check("http://127.0.0.9/")).toEqual({ allowed: false, reason: "127.0.0.9, a loopback address" });
    await expect(AddressPolicy.forSeeds(["http://169.254.169.254/latest/"], NONE, everyUrl)).rejects.toThrow(
      new AddressRefusedError("seed http://169.254.169.254/latest/ is not crawled: 169.254.169.254, a link-local address (--allowAddresses can allow it)"),
    );
  });

  it("only the URLs that go through a proxy: a URL fetched directly is resolved here as before", async () => {
    const policy = await AddressPolicy.forSeeds(["http://93.184.216.34/"], NONE, (url) => new URL(url).hostname.endsWith(".through-proxy.test"));
    expect(await policy.check("http://seed.through-proxy.test/")).toEqual({ allowed: true });
    expect(await policy.check("http://direct.example/")).toEqual({ allowed: false, reason: "direct.example is not resolved in tests (CRAWLER_TEST_NO_DNS)" });
  });

  it("by default follows the running proxies' routes (--proxyServerConfig: one host through a proxy, the rest directly)", async () => {
    // A loopback port that accepts connections stands for the proxy: startProxies only checks it is reachable.
    const fakeProxy = createTcpServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => fakeProxy.listen(0, "127.0.0.1", resolve));
    const proxy = parseProxyUrl(`http://127.0.0.1:${(fakeProxy.address() as { port: number }).port}`, "routed", { privateKeyFile: null, knownHostsFile: null });
    try {
      await startProxies({ routes: [{ pattern: /through-proxy\.test/, proxy }], fallback: null });
      const policy = await AddressPolicy.forSeeds(["http://seed.through-proxy.test/"], NONE);
      expect(await policy.check("http://seed.through-proxy.test/a")).toEqual({ allowed: true });
      expect(await AddressPolicy.outsideACrawl().check("https://other.through-proxy.test/")).toEqual({ allowed: true });
      expect(await policy.check("http://direct.example/")).toEqual({ allowed: false, reason: "direct.example is not resolved in tests (CRAWLER_TEST_NO_DNS)" });
      await stopProxies();
      expect(await policy.check("http://seed.through-proxy.test/a")).toEqual({ allowed: false, reason: "seed.through-proxy.test is not resolved in tests (CRAWLER_TEST_NO_DNS)" });
    } finally {
      await stopProxies();
      await new Promise((resolve) => fakeProxy.close(resolve));
    }
  });
});

describe("the address policy on the crawler's own fetches (robots.txt, sitemaps, direct fetches)", () => {
  let site: FaultySite;
  let forbidden: FaultySite;
  let redirector: Server;
  let redirectorUrl: string;
  let rules: ConnectionRules;
  const saved = { ...process.env };

  beforeAll(async () => {
    site = await startFaultySite(1, {});
    forbidden = await startFaultySite(1, {}, "127.0.0.2");
    const forbiddenPort = new URL(forbidden.url).port;
    // Redirects to the forbidden server under a name and an address; the test treats 127.0.0.2 as link-local.
    redirector = createServer((req, res) => {
      const target = req.url === "/by-name" ? `http://evil.test:${forbiddenPort}/robots.txt` : `http://127.0.0.2:${forbiddenPort}/sitemap.xml`;
      res.writeHead(302, { location: target }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
    redirectorUrl = `http://127.0.0.1:${(redirector.address() as { port: number }).port}`;
    process.env.CRAWLER_TEST_HOSTS = "evil.test=127.0.0.2";
    process.env.CRAWLER_TEST_LINK_LOCAL = "127.0.0.2/32";
    const addresses = await AddressPolicy.forSeeds([site.url + "/"], NONE);
    rules = { addresses, headers: RequestHeaders.none, blocking: null };
  });
  afterAll(async () => {
    // In place: the process's test seams read this very object.
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
    await Promise.all([site.close(), forbidden.close(), new Promise((resolve) => redirector.close(resolve))]);
  });

  it("names are checked after resolution, and Chromium is told the same names", async () => {
    const policy = await AddressPolicy.forSeeds([site.url + "/"], NONE);
    expect(await policy.check(`http://evil.test:${new URL(forbidden.url).port}/`)).toEqual({ allowed: false, reason: "evil.test resolves to 127.0.0.2, a link-local address" });
    expect(await policy.check(site.url + "/page/1")).toEqual({ allowed: true });
    expect(chromiumHostResolverArgs()).toEqual(["--host-resolver-rules=MAP evil.test 127.0.0.2"]);
  });

  it("the crawler's sockets resolve through the policy and never connect to a refused address", async () => {
    const lookup = (host: string, all: boolean) =>
      new Promise<string | LookupAddress[]>((resolve, reject) => rules.addresses.lookup(host, { all }, (err, address) => (err ? reject(err) : resolve(address))));
    await expect(lookup("evil.test", false)).rejects.toThrow("not fetched: evil.test resolves to 127.0.0.2, a link-local address");
    await expect(lookup("127.0.0.2", true)).rejects.toThrow(AddressRefusedError);
    await expect(lookup("127.0.0.1", true)).resolves.toEqual([{ address: "127.0.0.1", family: 4 }]);
    await expect(lookup("127.0.0.1", false)).resolves.toBe("127.0.0.1");
  });

  it("a redirect hop to a forbidden address is not followed, and nothing reaches that server", async () => {
    await expect(plainFetch(`${redirectorUrl}/by-name`, { rules, userAgent: null, timeoutMs: 5000, maxBytes: 1000 })).rejects.toThrow(AddressRefusedError);
    await expect(plainFetch(`${redirectorUrl}/by-address`, { rules, userAgent: null, timeoutMs: 5000, maxBytes: 1000 })).rejects.toThrow(
      "not fetched: 127.0.0.2, a link-local address",
    );
    await expect(directFetch(`${forbidden.url}/page/1`, { rules })).rejects.toThrow(AddressRefusedError);

    // robots.txt redirected there: unreachable (RFC 9309), so nothing on that host is crawled.
    const robots = new RobotsTxt({ rules, userAgent: null, agent: "warc-crawler" });
    const redirectedRobots = `http://evil.test:${new URL(forbidden.url).port}`;
    expect(await robots.check(`${redirectedRobots}/page/1`)).toEqual({ allowed: false, reason: "robots.txt unreachable" });

    // A sitemap redirected there, and a child sitemap there: failed, not read.
    const counts = { sitemaps: 0, failed: 0, skipped: 0 };
    const entries = [];
    for await (const entry of readSitemaps([`${redirectorUrl}/to-sitemap`, `${forbidden.url}/sitemap.xml`], { rules, userAgent: null, timeoutMs: 5000 }, counts)) entries.push(entry);
    expect(entries).toEqual([]);
    expect(counts).toEqual({ sitemaps: 2, failed: 2, skipped: 0 });
    expect(Object.fromEntries(forbidden.hits)).toEqual({});
  });
});
