import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { STATUS_CODES } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { shortOfDeclaredLength, type Exchange, type ExchangeBody } from "../archive/exchange.js";
import { refuseForbiddenAddress } from "./addressPolicy.js";

const IN_MEMORY_LIMIT = 4_000_000;
/** User-Agent of the crawler's own fetches when --userAgent is not given. */
export const DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; warc-crawler)";
const UNCONDITIONAL_DROPS = new Set(["host", "accept-encoding", "range", "if-range", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since"]);

export interface DirectFetchOptions {
  userAgent?: string | null;
  headers?: [string, string][];
  timeoutMs?: number;
}

/**
 * Fetch a URL outside the browser (non-HTML pages the browser would only download, full bodies behind a
 * 206). undici hands over the body with transfer-encoding removed and content-encoding kept, exactly
 * the WARC payload; redirects are not followed, they are captured as they are.
 */
export async function directFetch(url: string, options: DirectFetchOptions = {}): Promise<Exchange> {
  await refuseForbiddenAddress(url);
  // The browser's headers are kept, except those that would make the answer partial or conditional
  // (a direct fetch is made to get the full resource) and Accept-Encoding (only codings replay tools read).
  const given = (options.headers ?? []).filter(([n]) => !UNCONDITIONAL_DROPS.has(n.toLowerCase()));
  const defaults: [string, string][] = [
    ["User-Agent", options.userAgent ?? DEFAULT_USER_AGENT],
    ["Accept", "*/*"],
    ["Accept-Encoding", "gzip, deflate, br"],
  ];
  const requestHeaders: [string, string][] = [
    ["Host", new URL(url).host],
    ...defaults.filter(([n]) => !given.some(([g]) => g.toLowerCase() === n.toLowerCase())),
    ...given,
  ];
  const timeout = options.timeoutMs ?? 60_000;
  const response = await request(url, {
    method: "GET",
    headers: requestHeaders.filter(([n]) => n !== "Host").flat(),
    headersTimeout: timeout,
    bodyTimeout: timeout,
  });
  const date = new Date();
  const responseHeaders: [string, string][] = [];
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) responseHeaders.push([name, v]);
  }

  let body: ExchangeBody;
  const chunks: Buffer[] = [];
  let size = 0;
  let cutOff = false;
  let file: { path: string; stream: ReturnType<typeof createWriteStream> } | null = null;
  try {
    try {
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (!file && size > IN_MEMORY_LIMIT) {
          const path = join(tmpdir(), `crawler-body-${process.pid}-${randomUUID()}`);
          file = { path, stream: createWriteStream(path) };
          for (const c of chunks.splice(0)) file.stream.write(c);
        }
        if (file) {
          if (!file.stream.write(chunk)) await new Promise<void>((r) => file!.stream.once("drain", () => r()));
        } else {
          chunks.push(chunk);
        }
      }
    } catch (err) {
      // The connection ended mid-body: keep the part received, marked as cut off.
      if (!isCutOff(err)) throw err;
      cutOff = true;
    }
    if (file) {
      const stream = file.stream;
      await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
      body = { kind: "file", path: file.path, size };
    } else {
      body = { kind: "bytes", bytes: Buffer.concat(chunks) };
    }
  } catch (err) {
    if (file) await rm(file.path, { force: true });
    throw err;
  }

  return {
    url,
    method: "GET",
    requestHeaders,
    postData: null,
    status: response.statusCode,
    statusText: STATUS_CODES[response.statusCode] ?? "",
    httpVersion: "HTTP/1.1",
    responseHeaders,
    body,
    bodyDecoded: false,
    date,
    resourceType: "Direct",
    // undici hands over the body as sent (content-encoding kept), so Content-Length always applies.
    ...(cutOff || shortOfDeclaredLength(responseHeaders, size, false) ? { truncated: "disconnect" as const } : {}),
  };
}

/** Errors undici raises when the server's connection ends or stalls before the body is complete. */
function isCutOff(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && ["UND_ERR_SOCKET", "UND_ERR_BODY_TIMEOUT", "ECONNRESET", "UND_ERR_RES_CONTENT_LENGTH_MISMATCH"].includes(code);
}
