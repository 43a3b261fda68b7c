import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sshArgs } from "../../../src/proxy/sshTunnel.js";
import { proxiesInUse, proxyOf, proxySettings, ProxyConfigError, routingKey, safeProxyString, type ProxySettings } from "../../../src/proxy/proxySettings.js";

const dir = mkdtempSync(join(tmpdir(), "proxy-settings-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function configFile(text: string): string {
  const path = join(dir, `proxies-${++files}.yaml`);
  writeFileSync(path, text);
  return path;
}

const nameOf = (settings: ProxySettings | null, url: string) => (settings ? (proxyOf(settings, url)?.name ?? "direct") : "direct");

describe("proxy settings", () => {
  it("--proxyServer, else PROXY_SERVER, else PROXY_HOST + PROXY_PORT (browsertrix-crawler 0.x); none: null", () => {
    expect(proxySettings({}, {})).toBeNull();
    expect(proxySettings({ proxyServer: "http://a.test:3128" }, { PROXY_SERVER: "socks5://b.test:1080" })?.fallback).toMatchObject({ kind: "http", host: "a.test", port: 3128 });
    expect(proxySettings({}, { PROXY_SERVER: "socks5://b.test:1080", PROXY_HOST: "c.test", PROXY_PORT: "8080" })?.fallback).toMatchObject({ kind: "socks5", host: "b.test" });
    expect(proxySettings({}, { PROXY_HOST: "c.test", PROXY_PORT: "8080" })?.fallback).toMatchObject({ kind: "http", host: "c.test", port: 8080 });
    expect(proxySettings({}, { PROXY_HOST: "c.test" })).toBeNull();
  });

  it("parses each kind, with credentials, default ports, IPv6 hosts; ssh:// logs in as root by default", () => {
    const of = (url: string) => proxySettings({ proxyServer: url, sshProxyPrivateKeyFile: "/k", sshProxyKnownHostsFile: "/kh" }, {})!.fallback!;
    expect(of("http://user:p%40ss@proxy.test")).toMatchObject({ kind: "http", port: 80, username: "user", password: "p@ss", privateKeyFile: null });
    expect(of("https://proxy.test")).toMatchObject({ kind: "https", port: 443 });
    expect(of("socks5://u:p@[::1]:1081")).toMatchObject({ kind: "socks5", host: "::1", port: 1081, username: "u", password: "p" });
    expect(of("socks://proxy.test")).toMatchObject({ kind: "socks5", port: 1080 });
    expect(of("socks4://proxy.test:9050")).toMatchObject({ kind: "socks4", port: 9050 });
    expect(of("ssh://proxy.test")).toMatchObject({ kind: "ssh", port: 22, username: "root", privateKeyFile: "/k", knownHostsFile: "/kh" });
    expect(of("ssh://crawler@proxy.test:2222")).toMatchObject({ username: "crawler", port: 2222 });
  });

  it("a bad proxy URL is a config error that never shows its password", () => {
    expect(() => proxySettings({ proxyServer: "ftp://user:secret@proxy.test" }, {})).toThrow(ProxyConfigError);
    expect(() => proxySettings({ proxyServer: "ftp://user:secret@proxy.test" }, {})).not.toThrow(/secret/);
    expect(() => proxySettings({ proxyServer: "not a url" }, {})).toThrow(/--proxyServer/);
    expect(safeProxyString("socks5://username:password@proxy-host.example.com:9001")).toBe("socks5://proxy-host.example.com:9001");
    expect(safeProxyString("socks5://username@proxy-host.example.com:9001")).toBe("socks5://proxy-host.example.com:9001");
  });

  it("--proxyServerConfig: the last matching rule wins, \"\" names the proxy of other URLs, else --proxyServer, else direct", () => {
    const file = configFile([
      "matchHosts:",
      "  example\\.com/.*: one",
      "  https://example\\.com/: two",
      "  \"\": fallback",
      "proxies:",
      "  one: socks5://u:p@one.test:1080",
      "  two: {url: http://two.test:3128}",
      "  fallback: http://fallback.test:3128",
      "  unused: ssh://unused.test",
      "",
    ].join("\n"));
    const settings = proxySettings({ proxyServerConfig: file, proxyServer: "http://single.test:3128" }, {});
    expect(nameOf(settings, "http://example.com/a")).toBe("one");
    expect(nameOf(settings, "https://example.com/a")).toBe("two");
    expect(nameOf(settings, "http://other.test/")).toBe("fallback");
    // Only proxies some rule names are started.
    expect(proxiesInUse(settings!).map((p) => p.name).sort()).toEqual(["fallback", "one", "two"]);

    const noDefault = proxySettings({ proxyServerConfig: configFile("matchHosts:\n  a\\.test: one\nproxies:\n  one: http://one.test:1\n") }, {});
    expect(nameOf(noDefault, "http://a.test/")).toBe("one");
    expect(nameOf(noDefault, "http://b.test/")).toBe("direct");
    const withSingle = proxySettings({ proxyServerConfig: configFile("matchHosts:\n  a\\.test: one\nproxies:\n  one: http://one.test:1\n"), proxyServer: "http://single.test:2" }, {});
    expect(nameOf(withSingle, "http://b.test/")).toBe("proxyServer");
    expect(nameOf(withSingle, "http://a.test/")).toBe("one");
  });

  it("--proxyServerPreferSingleProxy: --proxyServer for every URL", () => {
    const file = configFile("matchHosts:\n  a\\.test: one\nproxies:\n  one: http://one.test:1\n");
    const settings = proxySettings({ proxyServerConfig: file, proxyServer: "http://single.test:2", proxyServerPreferSingleProxy: true }, {});
    expect(nameOf(settings, "http://a.test/")).toBe("proxyServer");
    // Without a single proxy, the config applies.
    expect(nameOf(proxySettings({ proxyServerConfig: file, proxyServerPreferSingleProxy: true }, {}), "http://a.test/")).toBe("one");
  });

  it("https URLs are matched on their origin only, as Chromium shows them to a proxy choice", () => {
    expect(routingKey("https://example.com:8443/path?q=1")).toBe("https://example.com:8443/");
    expect(routingKey("http://example.com/path?q=1")).toBe("http://example.com/path?q=1");
    const settings = proxySettings({ proxyServerConfig: configFile("matchHosts:\n  /posts/: one\nproxies:\n  one: http://one.test:1\n") }, {});
    expect(nameOf(settings, "http://social.test/posts/1")).toBe("one");
    expect(nameOf(settings, "https://social.test/posts/1")).toBe("direct");
  });

  it("ssh proxies in the config: own key files, ignoreOnFailedSSHTunnel", () => {
    const file = configFile([
      "matchHosts:",
      "  a\\.test: tunnel",
      "proxies:",
      "  tunnel:",
      "    url: ssh://crawler@ssh.test:2222",
      "    privateKeyFile: /keys/tunnel",
      "    publicHostsFile: /keys/known",
      "    ignoreOnFailedSSHTunnel: true",
      "",
    ].join("\n"));
    const tunnel = proxyOf(proxySettings({ proxyServerConfig: file, sshProxyPrivateKeyFile: "/keys/default" }, {})!, "http://a.test/")!;
    expect(tunnel).toMatchObject({ kind: "ssh", username: "crawler", port: 2222, privateKeyFile: "/keys/tunnel", knownHostsFile: "/keys/known", ignoreOnFailedSSHTunnel: true });
    const args = sshArgs(tunnel, 40000);
    expect(args).toEqual(expect.arrayContaining(["-N", "-D", "127.0.0.1:40000", "-p", "2222", "-i", "/keys/tunnel", "UserKnownHostsFile=/keys/known", "StrictHostKeyChecking=yes", "BatchMode=yes"]));
    expect(args.at(-1)).toBe("crawler@ssh.test");
  });

  it("config errors: missing file, a rule naming no proxy, a bad regex; a file without both sections changes nothing", () => {
    expect(() => proxySettings({ proxyServerConfig: join(dir, "nope.yaml") }, {})).toThrow(/cannot be read: no such file/);
    expect(() => proxySettings({ proxyServerConfig: configFile("matchHosts:\n  a: missing\nproxies:\n  one: http://one.test:1\n") }, {})).toThrow(/"missing", which is not in proxies/);
    expect(() => proxySettings({ proxyServerConfig: configFile("matchHosts:\n  \"(\": one\nproxies:\n  one: http://one.test:1\n") }, {})).toThrow(/not a regex/);
    expect(() => proxySettings({ proxyServerConfig: configFile("matchHosts: [\n") }, {})).toThrow(ProxyConfigError);
    expect(proxySettings({ proxyServerConfig: configFile("proxies:\n  one: http://one.test:1\n") }, {})).toBeNull();
    expect(proxySettings({ proxyServerConfig: configFile("proxies:\n  one: http://one.test:1\n"), proxyServer: "http://s.test:1" }, {})?.fallback?.name).toBe("proxyServer");
  });
});
