import type { Exchange } from "./exchange.js";
import { bodySize } from "./exchange.js";

/**
 * Response headers as stored in the WARC. The body we store has no transfer-encoding (and, from CDP, no
 * content-encoding either), so the original headers describing those encodings are renamed to
 * x-orig-* and Content-Length is set to the stored length: headers, block and digest must agree.
 */
export function storedResponseHeaders(exchange: Exchange): [string, string][] {
  const renamed = new Set(["transfer-encoding", ...(exchange.bodyDecoded ? ["content-encoding"] : [])]);
  const headers: [string, string][] = [];
  for (const [name, value] of exchange.responseHeaders) {
    const lower = name.toLowerCase();
    if (renamed.has(lower)) headers.push([`x-orig-${lower}`, value]);
    // A truncated body keeps the length the server declared, for the record.
    else if (lower === "content-length") {
      if (exchange.truncated) headers.push(["x-orig-content-length", value]);
    }
    else headers.push([name, value]);
  }
  if (!isBodylessStatus(exchange.status) || bodySize(exchange.body) > 0) {
    headers.push(["Content-Length", String(bodySize(exchange.body))]);
  }
  return headers;
}

function isBodylessStatus(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200);
}

export function statusLine(exchange: Pick<Exchange, "httpVersion" | "status" | "statusText">): string {
  return `${exchange.httpVersion} ${exchange.status} ${exchange.statusText}`.trimEnd();
}

export function requestLine(exchange: Pick<Exchange, "method" | "url" | "httpVersion">): string {
  const url = new URL(exchange.url);
  return `${exchange.method} ${url.pathname}${url.search} ${exchange.httpVersion}`;
}
