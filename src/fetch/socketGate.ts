import { connect, createServer, isIP, type Server, type Socket } from "node:net";
import { errorMessage, logger } from "../log/logger.js";
import { AddressRefusedError, type AddressPolicy } from "./addressPolicy.js";

/**
 * The address policy when a connection is opened, for the browser: a loopback SOCKS5 server (raw TCP: what
 * Chromium sends and receives passes byte for byte, as without it) that resolves each name as the policy does
 * and connects only to the addresses the policy approved, so what Chromium connects to is exactly what was
 * checked (a name that resolves to another address by then, DNS rebinding, changes nothing; a name that does
 * not resolve is refused). A crawl's Chromium, without a proxy, opens every connection through it: tabs'
 * requests (checked before they are sent too: capture/requests/addressCheck.ts), WebSocket handshakes, which never
 * pause in the Fetch domain, and Network.setBlockedURLs does not stop either (both tried on Chromium 156), a
 * service worker's script and first requests, Chromium's own. Other browsers (create-login-profile, the --qa
 * replay) send only their WebSockets here. A refused connection fails in the page as an unreachable one does.
 * SOCKS5 as Chromium speaks it takes no password: a local program could use the gate too, but reaches through
 * it nothing it could not connect to itself.
 */

/** How long a client has, from its connection, to send its greeting and its CONNECT request; one that stalls is dropped. */
export const SOCKS_HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * How long the connection to a target may take, all its addresses together; then the client is answered a
 * failure and the page's error is net::ERR_CONNECTION_TIMED_OUT. Below Chromium's own 30 s for a SOCKS
 * connect, so that the gate, not Chromium, says why (and no upstream connect outlives the client that asked).
 */
export const UPSTREAM_CONNECT_TIMEOUT_MS = 20_000;

/** The gate's deadlines (tests shorten them). */
export interface GateDeadlines {
  handshakeMs: number;
  connectMs: number;
}

const DEFAULT_DEADLINES: GateDeadlines = { handshakeMs: SOCKS_HANDSHAKE_TIMEOUT_MS, connectMs: UPSTREAM_CONNECT_TIMEOUT_MS };

export class SocketGate {
  /** Why the gate last failed to connect to host:port, in Chromium's words (bounded: the newest 1,000). */
  private readonly recentFailures = new Map<string, string>();

  private constructor(
    private readonly server: Server,
    private readonly policy: AddressPolicy,
    readonly port: number,
    readonly deadlines: GateDeadlines,
  ) {}

  /** A gate checking connections against `policy`, for the browsers of a run; it never keeps the process alive. */
  static async start(policy: AddressPolicy, deadlines: GateDeadlines = DEFAULT_DEADLINES): Promise<SocketGate> {
    let gate: SocketGate | null = null;
    const server: Server = createServer((client) => {
      client.on("error", () => undefined);
      void serve(client, gate!).catch((err: unknown) => {
        logger.debug("capture", "socket gate: connection dropped", { error: errorMessage(err) });
        client.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    server.unref();
    const address = server.address();
    if (!address || typeof address === "string") throw new Error("socket gate has no port");
    gate = new SocketGate(server, policy, address.port, deadlines);
    return gate;
  }

  /**
   * Chromium's switches for the gate: every connection (a crawl's browser), or only WebSockets (http and
   * https direct).
   */
  args(everyConnection: boolean): string[] {
    const rules = everyConnection ? `socks5://127.0.0.1:${this.port}` : `http=direct://;https=direct://;socks=socks5://127.0.0.1:${this.port}`;
    // <-loopback>: Chromium would otherwise never proxy loopback and link-local hosts, the very ones checked here.
    const args = [`--proxy-server=${rules}`, "--proxy-bypass-list=<-loopback>"];
    if (!everyConnection) return args;
    // Nothing else of Chromium's resolves a name (DNS prefetching, say: a packet to a DNS server of the page's
    // choosing) or sends UDP past the gate (WebRTC's ICE candidates, to any address a page names).
    return [...args, "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"];
  }

  /** The addresses a client may be connected to for `host`: AddressRefusedError when one is refused. */
  allowedAddresses(host: string): Promise<string[]> {
    return this.policy.resolveAllowed(host);
  }

  noteFailure(host: string, port: number, netError: string): void {
    const key = `${host.toLowerCase()}:${port}`;
    this.recentFailures.delete(key);
    if (this.recentFailures.size >= 1000) this.recentFailures.delete(this.recentFailures.keys().next().value!);
    this.recentFailures.set(key, netError);
  }

  /**
   * A navigation error of a page loaded through the gate, as Chromium would have said it connecting itself:
   * Chromium names every failure a SOCKS server reports ERR_SOCKS_CONNECTION_FAILED, which would hide a
   * refused connection (and count as a proxy's failure); the gate knows what happened. Others are kept.
   */
  failureExplained(error: string, url: string): string {
    if (!/net::ERR_SOCKS_CONNECTION_(FAILED|HOST_UNREACHABLE)/.test(error)) return error;
    try {
      const parsed = new URL(url);
      const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
      const port = Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
      const known = this.recentFailures.get(`${host.toLowerCase()}:${port}`);
      return known ? error.replace(/net::ERR_SOCKS_CONNECTION_(FAILED|HOST_UNREACHABLE)/, known) : error;
    } catch {
      return error;
    }
  }

  /**
   * Stop accepting connections. Those open run to their end, not waited for: one hung upstream must not hold
   * the end of a run (the server never keeps the process alive).
   */
  close(): Promise<void> {
    this.server.close();
    return Promise.resolve();
  }
}

// ttlExpired: what SOCKS servers answer a connect that timed out.
const REPLY = { succeeded: 0, notAllowed: 2, hostUnreachable: 4, refused: 5, ttlExpired: 6, commandNotSupported: 7, addressNotSupported: 8 } as const;

/** One SOCKS5 client (RFC 1928, no authentication, CONNECT only); dropped when its handshake stalls. */
async function serve(client: Socket, gate: SocketGate): Promise<void> {
  let stalled = false;
  const handshake = setTimeout(() => {
    stalled = true;
    client.destroy();
  }, gate.deadlines.handshakeMs);
  try {
    await proxy(client, gate, () => clearTimeout(handshake));
  } catch (err) {
    if (!stalled) throw err;
    logger.debug("capture", "socket gate: client dropped, its SOCKS handshake did not finish in time", { timeoutMs: gate.deadlines.handshakeMs });
  } finally {
    clearTimeout(handshake);
  }
}

async function proxy(client: Socket, gate: SocketGate, handshakeRead: () => void): Promise<void> {
  const input = new SocketReader(client);
  const [version, methodCount] = await input.read(2);
  const methods = await input.read(methodCount);
  if (version !== 5 || !methods.includes(0)) return void client.end(Buffer.from([5, 0xff]));
  client.write(Buffer.from([5, 0]));
  const [, command, , addressType] = await input.read(4);
  let host: string;
  if (addressType === 1) host = [...(await input.read(4))].join(".");
  else if (addressType === 3) host = (await input.read((await input.read(1))[0])).toString("latin1");
  else if (addressType === 4) host = ipv6Text(await input.read(16));
  else return socksReply(client, REPLY.addressNotSupported);
  const port = (await input.read(2)).readUInt16BE(0);
  handshakeRead();
  if (command !== 1) return socksReply(client, REPLY.commandNotSupported);
  let addresses: string[];
  try {
    addresses = await gate.allowedAddresses(host);
  } catch (err) {
    const refused = err instanceof AddressRefusedError;
    if (refused) logger.warn("capture", "socket blocked: not an address the crawler may fetch", { host, port, reason: errorMessage(err) });
    else logger.debug("capture", "socket not opened: its host name does not resolve", { host, port });
    gate.noteFailure(host, port, refused ? "net::ERR_BLOCKED_BY_CLIENT" : "net::ERR_NAME_NOT_RESOLVED");
    return socksReply(client, refused ? REPLY.notAllowed : REPLY.hostUnreachable);
  }
  const upstream = await connectFirst(addresses, port, gate.deadlines.connectMs, client);
  if (upstream instanceof Error) {
    const code = (upstream as NodeJS.ErrnoException).code ?? "";
    if (code === "ETIMEDOUT") logger.debug("capture", "socket not opened: the connection timed out", { host, port, timeoutMs: gate.deadlines.connectMs });
    gate.noteFailure(host, port, NET_ERRORS[code] ?? "net::ERR_CONNECTION_FAILED");
    return socksReply(client, code === "ETIMEDOUT" ? REPLY.ttlExpired : REPLY.refused);
  }
  if (client.destroyed) return void upstream.destroy();
  socksReply(client, REPLY.succeeded, false);
  const rest = input.rest();
  if (rest.length) upstream.write(rest);
  client.pipe(upstream).on("error", () => client.destroy());
  upstream.pipe(client);
  upstream.on("error", () => client.destroy());
  client.on("close", () => upstream.destroy());
}

function socksReply(client: Socket, code: number, end = true): void {
  const message = Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
  if (end) client.end(message);
  else client.write(message);
}

/**
 * A socket to the first of the (allowed) addresses that answers; the last error if none does, an ETIMEDOUT one
 * once `deadlineMs` passed. A client that goes away meanwhile takes the attempt with it.
 */
async function connectFirst(addresses: string[], port: number, deadlineMs: number, client: Socket): Promise<Socket | Error> {
  let failure = new Error("no address");
  const deadline = Date.now() + deadlineMs;
  for (const address of addresses) {
    const socket = await new Promise<Socket | Error>((resolve) => {
      const s = connect({ host: address, port, family: isIP(address) });
      const fail = (err: Error) => {
        clearTimeout(timer);
        client.off("close", gone);
        s.destroy();
        resolve(err);
      };
      const timer = setTimeout(() => fail(Object.assign(new Error(`connect to ${address}:${port} timed out after ${deadlineMs} ms`), { code: "ETIMEDOUT" })), Math.max(0, deadline - Date.now()));
      const gone = () => fail(Object.assign(new Error("the client went away"), { code: "ECONNABORTED" }));
      client.once("close", gone);
      s.once("connect", () => {
        clearTimeout(timer);
        client.off("close", gone);
        resolve(s);
      });
      s.once("error", fail);
    });
    if (!(socket instanceof Error)) return socket;
    failure = socket;
    if (["ETIMEDOUT", "ECONNABORTED"].includes((socket as NodeJS.ErrnoException).code ?? "")) break;
  }
  return failure;
}

/** Chromium's names for the connect errors it would have met itself. */
const NET_ERRORS: Record<string, string> = {
  ECONNREFUSED: "net::ERR_CONNECTION_REFUSED",
  ECONNRESET: "net::ERR_CONNECTION_RESET",
  ETIMEDOUT: "net::ERR_CONNECTION_TIMED_OUT",
  EHOSTUNREACH: "net::ERR_ADDRESS_UNREACHABLE",
  ENETUNREACH: "net::ERR_ADDRESS_UNREACHABLE",
};

function ipv6Text(bytes: Buffer): string {
  return Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16)).join(":");
}

/** Reads exact byte counts from a socket whose data comes in chunks of any size. */
class SocketReader {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  private ended = false;
  private readonly onData = (chunk: Buffer) => {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    this.waiting?.();
  };

  constructor(private readonly socket: Socket) {
    socket.on("data", this.onData);
    socket.once("close", () => {
      this.ended = true;
      this.waiting?.();
    });
  }

  async read(n: number): Promise<Buffer> {
    while (this.buffered.length < n) {
      if (this.ended) throw new Error("client closed mid-handshake");
      await new Promise<void>((resolve) => (this.waiting = resolve));
      this.waiting = null;
    }
    const out = this.buffered.subarray(0, n);
    this.buffered = this.buffered.subarray(n);
    return out;
  }

  /** Stop reading: what arrived beyond the handshake is the tunnel's first bytes. */
  rest(): Buffer {
    this.socket.off("data", this.onData);
    return this.buffered;
  }
}
