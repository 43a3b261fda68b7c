// The address policy's SOCKS5 gate, which a crawl's Chromium opens every connection through (issue 28, item 5):
// refused addresses and names that do not resolve are never connected to, and a page failing there keeps the
// error Chromium would have named connecting itself. The suite's policy: loopback allowed, link-local refused.
import { connect, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { AddressPolicy } from "../../../src/fetch/addressPolicy.js";
import { SocketGate } from "../../../src/fetch/socketGate.js";
import { isProxyFailure } from "../../../src/proxy/proxyFailure.js";
import { closedPort } from "../../helpers/closedPort.js";

/** The SOCKS5 reply code the gate gives a CONNECT to host:port (0: connected). */
async function socksConnect(gatePort: number, host: string, port: number): Promise<number> {
  const socket: Socket = connect({ host: "127.0.0.1", port: gatePort });
  const received: Buffer[] = [];
  const enough = (n: number) =>
    new Promise<Buffer>((resolve, reject) => {
      const check = () => {
        const all = Buffer.concat(received);
        if (all.length >= n) resolve(all);
      };
      socket.on("data", (chunk: Buffer) => {
        received.push(chunk);
        check();
      });
      socket.once("close", () => reject(new Error("closed")));
      check();
    });
  socket.write(Buffer.from([5, 1, 0]));
  await enough(2);
  received.length = 0;
  socket.removeAllListeners("data");
  const name = Buffer.from(host, "latin1");
  socket.write(Buffer.concat([Buffer.from([5, 1, 0, 3, name.length]), name, Buffer.from([port >> 8, port & 0xff])]));
  const reply = await enough(2);
  socket.destroy();
  return reply[1];
}


describe("the socket gate", () => {
  const gate = SocketGate.start(AddressPolicy.outsideACrawl());
  afterAll(async () => (await gate).close());

  it("sends every connection of a crawl's browser through it, and lets Chromium resolve no name nor send UDP itself", async () => {
    const args = (await gate).args(true);
    expect(args[0]).toMatch(/^--proxy-server=socks5:\/\/127\.0\.0\.1:\d+$/);
    expect(args).toContain("--proxy-bypass-list=<-loopback>");
    expect(args).toContain("--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1");
    expect(args).toContain("--force-webrtc-ip-handling-policy=disable_non_proxied_udp");
    expect((await gate).args(false)[0]).toMatch(/^--proxy-server=http=direct:\/\/;https=direct:\/\/;socks=socks5:\/\/127\.0\.0\.1:\d+$/);
  });

  it("refuses a link-local address and a name that does not resolve; a refused connection keeps its own error name", async () => {
    const port = (await gate).port;
    expect(await socksConnect(port, "169.254.169.254", 80)).toBe(2); // not allowed by the ruleset
    expect(await socksConnect(port, "nowhere.test", 80)).toBe(4); // host unreachable: not resolved
    const closed = await closedPort();
    expect(await socksConnect(port, "127.0.0.1", closed)).toBe(5);
    const url = `http://127.0.0.1:${closed}/`;
    expect((await gate).failureExplained(`net::ERR_SOCKS_CONNECTION_FAILED at ${url}`, url)).toBe(`net::ERR_CONNECTION_REFUSED at ${url}`);
    expect((await gate).failureExplained("net::ERR_SOCKS_CONNECTION_FAILED at http://127.0.0.1:1/", "http://127.0.0.1:1/")).toBe("net::ERR_SOCKS_CONNECTION_FAILED at http://127.0.0.1:1/");
    expect((await gate).failureExplained("net::ERR_ABORTED at x", url)).toBe("net::ERR_ABORTED at x");
  });

  it("counts a SOCKS failure as a proxy's only when the crawl has a proxy", () => {
    expect(isProxyFailure("net::ERR_SOCKS_CONNECTION_FAILED at http://a.test/", false)).toBe(false);
    expect(isProxyFailure("net::ERR_SOCKS_CONNECTION_FAILED at http://a.test/", true)).toBe(true);
    expect(isProxyFailure("net::ERR_PROXY_CONNECTION_FAILED", false)).toBe(true);
  });
});
