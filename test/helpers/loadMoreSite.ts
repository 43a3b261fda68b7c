/**
 * Loopback site of "Load more" buttons and long pages that never grow, for the autoscroll behavior. Each
 * button page fetches `/api/<name>?batch=N` (N = 1, 2, ...) on each press and appends the batch's items
 * (LOAD_MORE_PAGES says how it ends); each also has a "Show more stories" link to `/elsewhere.html` and a
 * "Show more" submit button of a form posting to `/submitted`, neither of which may be pressed.
 *
 *  - `/short.html`: the page fits the viewport (items 20 px tall); the button goes away after batch 4;
 *  - `/disabled.html`: as short, but the button is disabled after batch 4;
 *  - `/stale.html`: batches 1-3 bring items, batch 4 and later none: the button stays, adding nothing;
 *  - `/div.html`: the list and its button inside a 300 px `overflow: auto` <div> (which it fits at first, and
 *    overflows from batch 2); the button goes away after batch 4;
 *  - `/window.html`: a window-scrolled page of 1,500 px items; the button goes away after batch 4;
 *  - `/long.html`: 120 sections, 60,000 px, that never grow, with what documentation pages run: a clock
 *    (setInterval), an animation loop (requestAnimationFrame), a 100 ms timeout loop and a scroll listener
 *    that debounces its work (a 50 ms timeout), as mdBook's and Sphinx themes' do;
 *  - `/long-lazy.html`: the same with three images an IntersectionObserver loads when they come near
 *    (their URLs built in script, nowhere in an attribute: only a scroll loads them), at 15,000, 30,000 and
 *    45,000 px: `/img/seen-N.svg`;
 *  - `/busy.html`: 8,000 px whose scroll listener keeps the page's thread busy for 3 s on every scroll
 *    event: the autoscroll's calls into it answer late.
 */
import http from "node:http";
import { listenOnLoopback } from "../../fixtures/loopback.js";

/** Each button page: its batches, and the batches that bring items. */
export const LOAD_MORE_PAGES = { short: 4, disabled: 4, stale: 4, div: 4, window: 4 } as const;
export type LoadMorePage = keyof typeof LOAD_MORE_PAGES;
/** The last batch of /stale.html that brings items. */
export const STALE_LAST_ITEMS = 3;
export const ITEMS_PER_BATCH = 3;
export const SEEN_IMAGES = ["/img/seen-1.svg", "/img/seen-2.svg", "/img/seen-3.svg"];
export const LONG_SECTIONS = 120;

export function itemText(page: string, batch: number, item: number): string {
  return `Item ${batch}.${item} of ${page}`;
}

/** The request targets of a page's batches 1..n. */
export function batchTargets(page: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `/api/${page}?batch=${i + 1}`);
}

export interface LoadMoreSite {
  url: string;
  /** Request targets (path + query) in arrival order, with the method: "POST /submitted". */
  requests: string[];
  close(): Promise<void>;
}

function html(title: string, style: string, body: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title><link rel="icon" href="data:,">
<style>body { margin: 0; font: 16px sans-serif; } .item { height: 20px; margin: 0; } ${style}</style>
</head><body>
<p><a href="/elsewhere.html">Show more stories</a></p>
<form action="/submitted" method="post"><button>Show more</button></form>
${body}
</body></html>
`;
}

/** A list and its button; `ended` is what the page does to the button after the last batch. */
function buttonPage(name: LoadMorePage): string {
  const ended = name === "disabled" ? "more.disabled = true;" : "more.remove();";
  const style = name === "div" ? "#box { height: 300px; overflow: auto; border: 1px solid #333; }" : name === "window" ? ".item { height: 1500px; }" : "";
  const list = `<div id="list"></div><button id="more" type="button">Load more</button>`;
  return html(name, style, `${name === "div" ? `<div id="box"><div style="height: 200px">Above the list</div>${list}</div>` : list}
<script>
const list = document.getElementById("list");
const more = document.getElementById("more");
let next = 1;
let loading = false;
more.addEventListener("click", async () => {
  if (loading || more.disabled) return;
  loading = true;
  const answer = await (await fetch("/api/${name}?batch=" + next)).json();
  for (const text of answer.items) {
    const item = document.createElement("p");
    item.className = "item";
    item.textContent = text;
    list.appendChild(item);
  }
  next += 1;
  loading = false;
  if (answer.last) { ${ended} }
});
</script>`);
}

/** The long page's sections and scripts; `lazy`: with the three images only a scroll loads. */
function longPage(lazy: boolean): string {
  const sections = Array.from({ length: LONG_SECTIONS }, (_, i) => {
    const image = lazy && (i + 1) % 30 === 0 && i + 1 <= 90 ? `<img class="seen" data-n="${(i + 1) / 30}" width="40" height="40" alt="">` : "";
    return `<section style="height: 500px"><h2 id="s${i + 1}">Section ${i + 1}</h2>${image}<p>Text of section ${i + 1}.</p></section>`;
  }).join("\n");
  const observer = lazy
    ? `const seen = new IntersectionObserver((entries) => {
  for (const entry of entries) if (entry.isIntersecting) { entry.target.src = "/img/seen-" + entry.target.dataset.n + ".svg"; seen.unobserve(entry.target); }
});
document.querySelectorAll("img.seen").forEach((img) => seen.observe(img));`
    : "";
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>long</title><link rel="icon" href="data:,"></head><body>
<div id="clock"></div><div id="spinner" style="width: 10px; height: 10px; background: teal"></div>
${sections}
<script>
// Shown at once: the clock changes the page's text, never its height (growth would be a round).
const showTime = () => (document.getElementById("clock").textContent = new Date().toISOString());
showTime();
setInterval(showTime, 1000);
let angle = 0;
(function spin() { angle = (angle + 3) % 360; document.getElementById("spinner").style.transform = "rotate(" + angle + "deg)"; requestAnimationFrame(spin); })();
(function tick() { setTimeout(tick, 100); })();
let debounce;
addEventListener("scroll", () => { clearTimeout(debounce); debounce = setTimeout(() => document.body.classList.toggle("scrolled", scrollY > 0), 50); });
${observer}
</script>
</body></html>
`;
}

function busyPage(): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>busy</title><link rel="icon" href="data:,"></head><body>
<div style="height: 8000px">A page busy on every scroll</div>
<script>addEventListener("scroll", () => { const until = Date.now() + 3000; while (Date.now() < until); });</script>
</body></html>
`;
}

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40" fill="teal"/></svg>`;

export async function startLoadMoreSite(): Promise<LoadMoreSite> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const target = req.url ?? "/";
    requests.push(req.method === "GET" ? target : `${req.method} ${target}`);
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store", "Content-Length": Buffer.byteLength(body) });
      res.end(body);
    };
    const url = new URL(target, "http://127.0.0.1");
    const api = /^\/api\/(\w+)$/.exec(url.pathname);
    const pageName = /^\/([\w-]+)\.html$/.exec(url.pathname)?.[1];
    if (api && api[1] in LOAD_MORE_PAGES) {
      const name = api[1] as LoadMorePage;
      const batch = Number(url.searchParams.get("batch"));
      if (!Number.isInteger(batch) || batch < 1) return send(404, "text/plain", "no such batch\n");
      const brings = name === "stale" ? batch <= STALE_LAST_ITEMS : batch <= LOAD_MORE_PAGES[name];
      const items = brings ? Array.from({ length: ITEMS_PER_BATCH }, (_, i) => itemText(name, batch, i + 1)) : [];
      return send(200, "application/json", JSON.stringify({ items, last: name !== "stale" && batch >= LOAD_MORE_PAGES[name] }));
    }
    if (pageName && pageName in LOAD_MORE_PAGES) return send(200, "text/html", buttonPage(pageName as LoadMorePage));
    if (pageName === "long" || pageName === "long-lazy") return send(200, "text/html", longPage(pageName === "long-lazy"));
    if (pageName === "busy") return send(200, "text/html", busyPage());
    if (url.pathname === "/elsewhere.html") return send(200, "text/html", "<!doctype html><p>Another page</p>");
    if (SEEN_IMAGES.includes(url.pathname)) return send(200, "image/svg+xml", SVG);
    send(404, "text/plain", "not found\n");
  });
  server.keepAliveTimeout = 2_000;
  const { url, close } = await listenOnLoopback(server);
  return { url, requests, close };
}
