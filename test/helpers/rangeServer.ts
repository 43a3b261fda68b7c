// A loopback HTTP server for the files of one directory, with HEAD and single-range GET
// (206 + Content-Range), counting body bytes served and requests made.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOnLoopback } from "../../fixtures/loopback.js";
import { resolve, sep } from "node:path";

export interface RangeServerRequest {
  method: string;
  path: string;
  /** the Range header, if any */
  range: string | undefined;
}

export interface RangeServer {
  /** base URL ending in "/" */
  readonly url: string;
  /** body bytes written so far */
  readonly bytesServed: number;
  readonly requests: readonly RangeServerRequest[];
  resetCounters(): void;
  close(): Promise<void>;
}

export interface RangeServerOptions {
  /** false: ignore Range headers and answer 200 with the full body; default true */
  ranges?: boolean;
}

/** Parse a single `bytes=a-b`, `bytes=a-` or `bytes=-n`; null: ignore the header; "unsatisfiable": 416. */
function parseRange(header: string, size: number): { start: number; end: number } | null | "unsatisfiable" {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null; // multi-range or junk: serve the whole file
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { start, end };
}

export async function startRangeServer(dir: string, opts: RangeServerOptions = {}): Promise<RangeServer> {
  const root = resolve(dir);
  const ranges = opts.ranges ?? true;
  const state = { bytesServed: 0, requests: [] as RangeServerRequest[] };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? "GET";
    const rawPath = (req.url ?? "/").split("?")[0]!;
    const range = typeof req.headers.range === "string" ? req.headers.range : undefined;
    state.requests.push({ method, path: rawPath, range });

    if (method !== "GET" && method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    let path: string;
    try {
      path = resolve(root, "." + decodeURIComponent(rawPath));
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (!path.startsWith(root + sep)) {
      res.writeHead(404).end();
      return;
    }
    const st = await stat(path).catch(() => null);
    if (!st || !st.isFile()) {
      res.writeHead(404, { "content-type": "text/plain" }).end(method === "HEAD" ? undefined : "not found\n");
      return;
    }

    const size = st.size;
    const headers: Record<string, string | number> = { "content-type": "application/octet-stream" };
    if (ranges) headers["accept-ranges"] = "bytes";
    let status = 200;
    let start = 0;
    let end = size - 1;
    if (ranges && range !== undefined) {
      const r = parseRange(range, size);
      if (r === "unsatisfiable") {
        res.writeHead(416, { "content-range": `bytes */${size}` }).end();
        return;
      }
      if (r) {
        status = 206;
        ({ start, end } = r);
        headers["content-range"] = `bytes ${start}-${end}/${size}`;
      }
    }
    headers["content-length"] = end - start + 1;
    res.writeHead(status, headers);
    if (method === "HEAD" || size === 0) {
      res.end();
      return;
    }
    const body = createReadStream(path, { start, end });
    body.on("data", (chunk: Buffer | string) => {
      state.bytesServed += chunk.length;
    });
    body.on("error", () => res.destroy());
    // A client that hangs up early (e.g. on a 200 it did not want) stops the file read.
    res.on("close", () => body.destroy());
    body.pipe(res);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  const listener = await listenOnLoopback(server);

  return {
    url: `${listener.url}/`,
    get bytesServed() {
      return state.bytesServed;
    },
    get requests() {
      return state.requests;
    },
    resetCounters() {
      state.bytesServed = 0;
      state.requests = [];
    },
    close: listener.close,
  };
}
