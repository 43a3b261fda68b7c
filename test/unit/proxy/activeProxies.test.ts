import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumProxyArgs, relayInUse, startProxies, stopProxies } from "../../../src/proxy/activeProxies.js";
import { parseProxyUrl } from "../../../src/proxy/proxySettings.js";

const NO_SSH_FILES = { privateKeyFile: null, knownHostsFile: null };

describe("the proxy Chromium is given", () => {
  // A loopback port that accepts connections stands for the proxy: startProxies only checks it is reachable.
  const fakeProxy = createServer((socket) => socket.destroy());
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => fakeProxy.listen(0, "127.0.0.1", resolve));
    port = (fakeProxy.address() as { port: number }).port;
  });
  afterAll(async () => {
    await stopProxies();
    await new Promise((resolve) => fakeProxy.close(resolve));
  });

  it("a SOCKS5 proxy without credentials directly (Chromium sends it names); a SOCKS4 one through the relay, as SOCKS4 would have Chromium resolve names itself", async () => {
    await startProxies({ routes: [], fallback: parseProxyUrl(`socks5://127.0.0.1:${port}`, "proxyServer", NO_SSH_FILES) });
    expect(relayInUse()).toBe(false);
    expect(chromiumProxyArgs()).toEqual([`--proxy-server=socks5://127.0.0.1:${port}`, "--proxy-bypass-list=<-loopback>"]);
    await startProxies({ routes: [], fallback: parseProxyUrl(`socks4://127.0.0.1:${port}`, "proxyServer", NO_SSH_FILES) });
    expect(relayInUse()).toBe(true);
    expect(chromiumProxyArgs()).toEqual([expect.stringMatching(/^--proxy-server=http:\/\/127\.0\.0\.1:\d+$/), "--proxy-bypass-list=<-loopback>"]);
    expect(chromiumProxyArgs()[0]).not.toBe(`--proxy-server=http://127.0.0.1:${port}`);
    await stopProxies();
  });
});
