import { connect } from "node:net";

/**
 * A loopback port nothing listens on, for "connection refused" tests. Not freePort(): that hands out a port of
 * the ephemeral range, free now, which a server another test file starts on port 0 may be given a moment later
 * (seen on CI: an "unreachable" seed answered with an empty response). Ports 20000-29999 lie below the
 * ephemeral range (32768-60999) and outside Chromium's restricted ports; the one returned refused a connection.
 */
export async function closedPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (await refuses(port)) return port;
  }
  throw new Error("no closed loopback port found in 20000-29999");
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code === "ECONNREFUSED"));
  });
}
