import { describe, expect, it } from "vitest";
import { remoteResolvingUrl } from "../../../src/proxy/proxyDispatchers.js";

describe("a proxy's URL for clients that resolve by scheme (the relay's SOCKS upstreams, git)", () => {
  it("names SOCKS so that the proxy resolves host names: socks5h, socks4a; credentials URL-encoded", () => {
    expect(remoteResolvingUrl({ kind: "socks5", host: "127.0.0.1", port: 1080, username: "u", password: "p@ss" })).toBe("socks5h://u:p%40ss@127.0.0.1:1080");
    expect(remoteResolvingUrl({ kind: "socks4", host: "::1", port: 9050, username: "", password: "" })).toBe("socks4a://[::1]:9050");
    expect(remoteResolvingUrl({ kind: "http", host: "proxy.test", port: 3128, username: "", password: "" })).toBe("http://proxy.test:3128");
  });
});
