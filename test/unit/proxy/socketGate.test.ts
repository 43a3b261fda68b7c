// The address policy's SOCKS5 gate, which a crawl's Chromium opens every connection through (issue 28, item 5):
// refused addresses and names that do not resolve are never connected to, and a page failing there keeps the
// error Chromium would have named connecting itself. The suite's policy: loopback allowed, link-local refused.
import { connect, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { AddressPolicy } from "../../../src/fetch/addressPolicy.js";
import { SOCKS_HANDSHAKE_TIMEOUT_MS, SocketGate, UPSTREAM_CONNECT_TIMEOUT_MS } from "../../../src/fetch/socketGate.js";
import { isProxyFailure } from "../../../src/proxy/proxyFailure.js";
import { closedPort } from "../../helpers/closedPort.js";
import { hangingPort } from "../../helpers/hangingPort.js";

/** When (ms after connecting) the gate closed a client that sent `bytes` and then nothing; null if not within `waitMs`. */
async function closedAfter(gatePort: number, bytes: number[], waitMs: number): Promise<number | null> {
  const socket = connect({ host: "127.0.0.1", port: gatePort });
  const start = Date.now();
  socket.on("data", () => undefined);
  socket.on("error", () => undefined);
  socket.once("connect", () => socket.write(Buffer.from(bytes)));
  const closed = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), waitMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(Date.now() - start);
    });
  });
  socket.destroy();
  return closed;
}

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

  it("has deadlines on a client's handshake and on the connect to its target", async () => {
    expect(SOCKS_HANDSHAKE_TIMEOUT_MS).toBe(10_000);
    expect(UPSTREAM_CONNECT_TIMEOUT_MS).toBe(20_000);
    expect((await gate).deadlines).toEqual({ handshakeMs: 10_000, connectMs: 20_000 });
  });
});

describe("the socket gate's deadlines", () => {
  const gate = SocketGate.start(AddressPolicy.outsideACrawl(), { handshakeMs: 400, connectMs: 600 });
  afterAll(async () => (await gate).close());

  it("drops a client that connects and says nothing, or stops mid-handshake, once the handshake deadline passed", async () => {
    const port = (await gate).port;
    const [silent, greetedOnly, halfRequest] = await Promise.all([
      closedAfter(port, [], 3000),
      closedAfter(port, [5, 1, 0], 3000),
      closedAfter(port, [5, 1, 0, 5, 1, 0, 3], 3000),
    ]);
    for (const after of [silent, greetedOnly, halfRequest]) {
      expect(after).not.toBeNull();
      expect(after!).toBeGreaterThanOrEqual(350);
      expect(after!).toBeLessThan(1500);
    }
  });

  it("answers a CONNECT whose target never completes the connection with a failure at the connect deadline: the page's error says it timed out", async () => {
    const hanging = await hangingPort();
    try {
      const start = Date.now();
      const reply = await Promise.race([socksConnect((await gate).port, "127.0.0.1", hanging.port), new Promise<string>((r) => setTimeout(() => r("no answer within 4 s"), 4000))]);
      const took = Date.now() - start;
      expect(reply).toBe(6); // TTL expired: a timed-out connect
      expect(took).toBeGreaterThanOrEqual(550);
      expect(took).toBeLessThan(2000);
      const url = `http://127.0.0.1:${hanging.port}/`;
      expect((await gate).failureExplained(`net::ERR_SOCKS_CONNECTION_FAILED at ${url}`, url)).toBe(`net::ERR_CONNECTION_TIMED_OUT at ${url}`);
    } finally {
      hanging.close();
    }
  });
});
