import { spawn } from "node:child_process";
import { connect, type Socket } from "node:net";

// A listener with a backlog of 1 whose process never accepts: its event loop blocked (Atomics.wait, no CPU) once listening.
const LISTENER = `
const server = require("node:net").createServer();
server.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
  process.stdout.write(server.address().port + "\\n", () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
});`;

/**
 * A loopback port whose connections never complete: a listener that never accepts, its queue filled by connections
 * of its own; the kernel drops further SYNs, so a connect hangs (until the connecting side gives up).
 */
export async function hangingPort(): Promise<{ port: number; close: () => void }> {
  const listener = spawn(process.execPath, ["-e", LISTENER], { stdio: ["ignore", "pipe", "inherit"] });
  const port = Number(await new Promise<string>((resolve, reject) => {
    listener.once("error", reject);
    listener.stdout.once("data", (d: Buffer) => resolve(String(d).trim()));
  }));
  // Connections complete (queued by the kernel) until the queue is full: the first one that does not is the sign.
  const queued: Socket[] = [];
  for (;;) {
    const socket = connect({ host: "127.0.0.1", port });
    queued.push(socket);
    const connected = await new Promise<boolean>((resolve) => {
      socket.once("connect", () => resolve(true));
      setTimeout(() => resolve(false), 300);
    });
    if (!connected) break;
    if (queued.length > 16) throw new Error("the listener's queue never filled");
  }
  return {
    port,
    close: () => {
      for (const socket of queued) socket.destroy();
      listener.kill("SIGKILL");
    },
  };
}
