import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Everyday pages that never stop moving, on loopback: pages that poll every 200 ms (a chat widget, an
 * analytics beacon), a ticker adding a line every 300 ms, a page opening a new request every 100 ms, one
 * re-downloading the same image every 100 ms, and a long-poll page whose server holds each answer 15 s.
 * Every request is logged with the time it reached the server and the page it came from (its Referer).
 */
export interface DynamicSite {
  url: string;
  requests: { path: string; referer: string | null; at: number }[];
  close(): Promise<void>;
}

/** The pages the index links to, and what each keeps fetching (the page itself polls in a loop). */
export const DYNAMIC_PAGES: Record<string, string> = {
  "/poll/1": "fetch('/poll-data?page=1&n=' + n++)",
  "/poll/2": "fetch('/poll-data?page=2&n=' + n++)",
  "/poll/3": "fetch('/poll-data?page=3&n=' + n++)",
  "/ticker": "fetch('/tick?n=' + n++).then((r) => r.text()).then((t) => { const p = document.createElement('p'); p.textContent = t; document.body.append(p); })",
  "/rapid": "fetch('/rapid-data?i=' + n++)",
  "/reimage": "fetch('/same.png', { cache: 'no-store' })",
};
const INTERVAL_MS: Record<string, number> = { "/poll/1": 200, "/poll/2": 200, "/poll/3": 200, "/ticker": 300, "/rapid": 100, "/reimage": 100 };
/** How long the long-poll server holds each answer. */
export const LONG_POLL_HOLD_MS = 15_000;
export const SAME_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");

export async function startDynamicSite(): Promise<DynamicSite> {
  const requests: DynamicSite["requests"] = [];
  const holds = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? "/";
    requests.push({ path, referer: req.headers.referer ?? null, at: Date.now() });
    const html = (body: string) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(`<!doctype html><html><head><title>${path}</title></head><body>${body}</body></html>`);
    };
    if (path === "/") {
      const pages = [...Object.keys(DYNAMIC_PAGES), "/longpoll"];
      return html(pages.map((p) => `<a href="${p}">${p}</a>`).join("\n"));
    }
    const loop = DYNAMIC_PAGES[path];
    if (loop) return html(`<img src="/same.png"><h1>${path}</h1><script>let n = 0; setInterval(() => { ${loop}; }, ${INTERVAL_MS[path]});</script>`);
    if (path === "/longpoll") return html(`<h1>long poll</h1><script>let n = 0; async function wait() { for (;;) { const r = await fetch('/wait?n=' + n++); document.body.append(await r.text()); } } wait();</script>`);
    if (path === "/same.png") {
      res.writeHead(200, { "content-type": "image/png", "cache-control": "no-store" });
      return res.end(SAME_PNG);
    }
    if (path.startsWith("/wait")) {
      const hold = setTimeout(() => {
        holds.delete(hold);
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`answer ${path}`);
      }, LONG_POLL_HOLD_MS);
      holds.add(hold);
      return;
    }
    if (/^\/(poll-data|tick|rapid-data)/.test(path)) {
      res.writeHead(200, { "content-type": "text/plain", "cache-control": "no-store" });
      return res.end(`data for ${path}`);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      for (const hold of holds) clearTimeout(hold);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
