import { request } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { LiveViewServer } from "../../../src/screencast/liveViewServer.js";
import { ViewerHub } from "../../../src/screencast/viewerHub.js";

// The live view off loopback (SCREENCAST_HOST=0.0.0.0 in a container): a token in the URL and the page's own
// Origin on its WebSocket. Tests never leave loopback: 127.0.0.2 is marked off loopback by the server's option.

const OFF_HOST = "127.0.0.2";
const servers: LiveViewServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.close();
});

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    }).on("error", reject).end();
  });
}

/** Open the stream: the first message, or the HTTP status it was refused with. */
function stream(url: string, origin?: string): Promise<{ refused: number } | { message: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, origin ? { origin } : {});
    ws.on("unexpected-response", (_req, res) => {
      resolve({ refused: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.on("message", (data: Buffer) => {
      resolve({ message: data.toString() });
      ws.close();
    });
    ws.on("error", (err) => (/Unexpected server response/.test(err.message) ? undefined : reject(err)));
  });
}

async function liveServer(host: string, offLoopback: boolean): Promise<{ server: LiveViewServer; hub: ViewerHub }> {
  const hub = new ViewerHub();
  hub.receive({ msg: "warning", timestamp: "", level: "warn", context: "page", message: "a warning only viewers see", process: "p" });
  const server = await LiveViewServer.start(0, hub, host, { offLoopback });
  servers.push(server);
  return { server, hub };
}

describe("live view off loopback", () => {
  it("the page and its stream need the token printed at the start, and the stream the page's own Origin", async () => {
    const { server } = await liveServer(OFF_HOST, true);
    const base = `http://${OFF_HOST}:${server.port}`;
    expect(server.token).toMatch(/^[\w-]{32}$/);
    expect(server.url).toBe(`${base}/?token=${server.token}`);

    expect((await get(`${base}/`)).status).toBe(403);
    expect((await get(`${base}/?token=wrong`)).status).toBe(403);
    const page = await get(server.url);
    expect(page.status).toBe(200);
    expect(page.body).toContain("new WebSocket");

    const ws = `ws://${OFF_HOST}:${server.port}/ws`;
    expect(await stream(ws, base)).toEqual({ refused: 403 });
    expect(await stream(`${ws}?token=${server.token!.slice(1)}x`, base)).toEqual({ refused: 403 });
    // Another site's page in the viewer's browser, with the token (leaked through a Referer, say): refused.
    expect(await stream(`${ws}?token=${server.token}`, "http://evil.example")).toEqual({ refused: 403 });
    const watched = await stream(`${ws}?token=${server.token}`, base);
    expect("message" in watched && watched.message).toContain("a warning only viewers see");
  });

  it("on loopback, as before: no token, the page's own Origin only", async () => {
    const { server } = await liveServer("127.0.0.1", false);
    const base = `http://127.0.0.1:${server.port}`;
    expect(server.token).toBeNull();
    expect(server.url).toBe(`${base}/`);
    expect((await get(`${base}/`)).status).toBe(200);
    expect(await stream(`ws://127.0.0.1:${server.port}/ws`, "http://evil.example")).toEqual({ refused: 403 });
    const watched = await stream(`ws://127.0.0.1:${server.port}/ws`, base);
    expect("message" in watched && watched.message).toContain("a warning only viewers see");
  });
});
