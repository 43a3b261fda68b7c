import { createServer, type Server } from "node:http";

export interface GeneratedSite {
  url: string;
  bytesServed: number;
  close(): Promise<void>;
}

export interface GeneratedSiteOptions {
  /**
   * Give every page what only in-page behaviors capture: a second `srcset` candidate, far below the
   * fold a `loading="lazy"` image and an IntersectionObserver `data-src` image, and at the bottom a feed
   * whose second page is fetched on scroll. See `lazyResourcePaths`.
   */
  lazy?: boolean;
}

/** Feed pages of a lazy generated page: the first is fetched on load, the others on scroll. */
const FEED_PAGES = 2;

/** Per page of a lazy site, the resources that loading the page alone does not fetch. */
export function lazyResourcePaths(pages: number): string[] {
  return Array.from({ length: pages }, (_, n) => [
    `/img/${n}-2x.svg`,
    `/lazy/${n}.svg`,
    `/io/${n}.svg`,
    ...Array.from({ length: FEED_PAGES - 1 }, (_, i) => `/feed/${n}?page=${i + 2}`),
  ]).flat();
}

/** Below the fold, beyond the distance at which Chromium starts loading lazy images. */
function lazyPart(n: number): string {
  return `<div style="height:3000px">Further down:</div>` +
    `<img loading="lazy" src="/lazy/${n}.svg" width="40" height="40"><img class="swap" data-src="/io/${n}.svg" width="40" height="40">` +
    `<div id="feed"></div><div id="sentinel">more</div><script>
const feed = document.getElementById("feed"), sentinel = document.getElementById("sentinel");
let next = 1, loading = false;
async function more() {
  if (loading || next === null) return;
  loading = true;
  const wait = document.createElement("div"); wait.style.height = "300px"; feed.append(wait);
  const data = await (await fetch("/feed/${n}?page=" + next)).json();
  wait.remove();
  for (const text of data.items) { const d = document.createElement("div"); d.style.height = "110px"; d.textContent = text; feed.append(d); }
  next = data.next; loading = false;
  if (next === null) feedWatch.disconnect();
}
const feedWatch = new IntersectionObserver((e) => e.some((x) => x.isIntersecting) && more(), { rootMargin: "0px 0px 200px 0px" });
more().then(() => feedWatch.observe(sentinel));
const swap = new IntersectionObserver((es) => es.forEach((e) => { if (e.isIntersecting) { e.target.src = e.target.dataset.src; swap.unobserve(e.target); } }));
document.querySelectorAll("img.swap").forEach((img) => swap.observe(img));
</script>`;
}

/**
 * A loopback site of `pages` HTML pages: page i links to pages 2i+1 and 2i+2 (a binary tree, so depth
 * grows slowly) and to the home page; every page loads a shared stylesheet and its own small image.
 */
export async function startGeneratedSite(pages: number, options: GeneratedSiteOptions = {}): Promise<GeneratedSite> {
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
    if ((match = /^\/(img|lazy|io)\/(\d+(?:-2x)?)\.svg$/.exec(path))) {
      return send(200, "image/svg+xml", Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><text y="20">${match[1]} ${match[2]}</text></svg>`));
    }
    if ((match = /^\/feed\/(\d+)$/.exec(path)) && options.lazy) {
      const page = Number(new URL(req.url ?? "/", "http://x").searchParams.get("page"));
      const items = Array.from({ length: 12 }, (_, i) => `item ${match![1]}.${page}.${i + 1}`);
      return send(200, "application/json", Buffer.from(JSON.stringify({ items, next: page < FEED_PAGES ? page + 1 : null })));
    }
    if ((match = /^\/page\/(\d+)\.html$/.exec(path)) && Number(match[1]) < pages) {
      const n = Number(match[1]);
      const links = [2 * n + 1, 2 * n + 2].filter((c) => c < pages).map((c) => `<a href="/page/${c}.html">page ${c}</a>`);
      const body = `<!doctype html><html><head><title>Page ${n}</title><link rel="icon" href="data:,">` +
        `<link rel="stylesheet" href="/style.css"></head><body><h1>Page ${n}</h1>` +
        (options.lazy ? `<img src="/img/${n}.svg" srcset="/img/${n}.svg 1x, /img/${n}-2x.svg 2x">` : `<img src="/img/${n}.svg">`) +
        `<p>${"Lorem ipsum dolor sit amet. ".repeat(40)}</p>` +
        `${links.join(" ")} <a href="/page/0.html">home</a>${options.lazy ? lazyPart(n) : ""}</body></html>`;
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
