import { createServer, type Server } from "node:http";

export interface GeneratedSite {
  url: string;
  bytesServed: number;
  close(): Promise<void>;
}

/**
 * A loopback site of `pages` HTML pages: page i links to pages 2i+1 and 2i+2 (a binary tree, so depth
 * grows slowly) and to the home page; every page loads a shared stylesheet and its own small image.
 */
export async function startGeneratedSite(pages: number): Promise<GeneratedSite> {
  const css = Buffer.from("body { font-family: sans-serif; } .item { margin: 4px; }\n".repeat(20));
  const site = { url: "", bytesServed: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const send = (status: number, type: string, body: Buffer) => {
      site.bytesServed += body.length;
      res.writeHead(status, { "Content-Type": type, "Content-Length": body.length });
      res.end(body);
    };
    let match: RegExpExecArray | null;
    if (path === "/style.css") return send(200, "text/css", css);
    if ((match = /^\/img\/(\d+)\.svg$/.exec(path))) {
      const n = Number(match[1]);
      return send(200, "image/svg+xml", Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><text y="20">${n}</text></svg>`));
    }
    if ((match = /^\/page\/(\d+)\.html$/.exec(path)) && Number(match[1]) < pages) {
      const n = Number(match[1]);
      const links = [2 * n + 1, 2 * n + 2].filter((c) => c < pages).map((c) => `<a href="/page/${c}.html">page ${c}</a>`);
      const body = `<!doctype html><html><head><title>Page ${n}</title><link rel="icon" href="data:,">` +
        `<link rel="stylesheet" href="/style.css"></head><body><h1>Page ${n}</h1>` +
        `<img src="/img/${n}.svg"><p>${"Lorem ipsum dolor sit amet. ".repeat(40)}</p>` +
        `${links.join(" ")} <a href="/page/0.html">home</a></body></html>`;
      return send(200, "text/html; charset=utf-8", Buffer.from(body));
    }
    send(404, "text/plain", Buffer.from("not found"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  site.url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  site.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return site;
}
