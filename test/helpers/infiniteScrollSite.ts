/**
 * Loopback site of feeds that load more as they are scrolled or clicked, for the autoscroll behavior:
 *
 *  - `/feed/<name>.html`: a window-scrolled feed; an IntersectionObserver on a 1 px sentinel after the last
 *    batch (and a scroll listener that finds it in view) fetches `/api/<name>?batch=N` (batch 1 as soon as
 *    the page shows), each batch 3,000 px tall.
 *    Feeds `feed-5`, `feed-20` and `feed-100` end after that many batches (the 100-batch page is 300,000 px);
 *    `endless` never ends.
 *  - `/feed/debounced.html`: a window feed (`/api/debounced`, 6 batches) with no observer: a debounced scroll
 *    listener asks for the next batch 300-400 ms after the scrolling stops (through a setTimeout the page
 *    kept a reference to at its start, as lodash's debounce does), if the sentinel is then near the viewport.
 *  - `/feed/slow-api.html`: the window feed of `/feed/<name>.html` whose API (`/api/slow-api`, 6 batches)
 *    answers each batch only after 300-400 ms.
 *  - `/div-feed.html`: the same feed (`/api/div-feed`, 8 batches) inside a 600 px `overflow: auto` <div>
 *    (the observer's root); the window itself does not scroll.
 *  - `/load-more.html`: batch 1 on load, then a "Load more" <button> after the list fetches the next batch
 *    (`/api/load-more`, 6 batches; the button goes away after the last). Beside it, a "Show more stories" link
 *    to `/elsewhere.html` and a "Show more" submit button of a form posting to `/submitted`: both navigate,
 *    so neither may be clicked.
 *  - `/lazy.html`: three `loading="lazy"` images 20,000 px and more below the fold (`/img/lazy-N.svg`).
 *  - `/feed/srcset.html`: a window feed (`/api/srcset`, 4 batches) whose batches each bring an image with
 *    1x and 2x candidates (`/img/srcset-N-1x.svg`, `-2x.svg`): the browser loads one, autofetch the other.
 */
import http from "node:http";
import { listenOnLoopback } from "../../fixtures/loopback.js";

export const BATCH_HEIGHT_PX = 3000;
export const WINDOW_FEEDS = { "feed-5": 5, "feed-20": 20, "feed-100": 100 } as const;
export type WindowFeed = keyof typeof WINDOW_FEEDS;
/** Feeds whose next batch comes 300-400 ms after the scrolling: the trigger's delay, or the server's. */
export const DELAYED_FEEDS = { debounced: 6, "slow-api": 6 } as const;
export type DelayedFeed = keyof typeof DELAYED_FEEDS;
export const DIV_FEED_BATCHES = 8;
export const LOAD_MORE_BATCHES = 6;
export const LAZY_IMAGES = ["/img/lazy-1.svg", "/img/lazy-2.svg", "/img/lazy-3.svg"];
export const SRCSET_FEED_BATCHES = 4;
/** The two candidates of the srcset feed's image in batch `n`. */
export function srcsetCandidates(n: number): [string, string] {
  return [`/img/srcset-${n}-1x.svg`, `/img/srcset-${n}-2x.svg`];
}

/** The text a feed shows for one batch (replay tests look for the last one). */
export function batchText(feed: string, batch: number): string {
  return `Batch ${batch} of ${feed}`;
}

/** The request targets of a feed's batches 1..n. */
export function batchRequests(feed: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `/api/${feed}?batch=${i + 1}`);
}

export interface InfiniteScrollSite {
  /** Base URL without trailing slash. */
  url: string;
  /** Request targets (path + query) in arrival order. */
  requests: string[];
  close(): Promise<void>;
}

/** Batches per feed API name; null: never ends. */
const FEED_SIZES: Record<string, number | null> = { ...WINDOW_FEEDS, ...DELAYED_FEEDS, endless: null, "div-feed": DIV_FEED_BATCHES, "load-more": LOAD_MORE_BATCHES, srcset: SRCSET_FEED_BATCHES };

/** The script every feed page shares: load(), appending one batch to #feed, and the end marker. */
function feedScript(feed: string): string {
  return `
const list = document.getElementById("feed");
let next = 1;
let loading = false;
async function load() {
  if (loading || next === null) return;
  loading = true;
  let data;
  try {
    const answer = await fetch("/api/${feed}?batch=" + next);
    data = await answer.json();
  } catch (err) {
    // As feeds do: the next time the trigger comes into view (or the button is clicked), it tries again.
    loading = false;
    return;
  }
  const batch = document.createElement("div");
  batch.className = "batch";
  batch.textContent = data.text;
  if (data.image) {
    const image = document.createElement("img");
    image.width = 40;
    image.height = 40;
    image.srcset = data.image.srcset;
    image.src = data.image.src;
    batch.prepend(image);
  }
  list.appendChild(batch);
  next = data.next;
  loading = false;
  if (next === null) {
    const end = document.createElement("p");
    end.textContent = "End of ${feed}";
    list.appendChild(end);
    document.dispatchEvent(new Event("feedend"));
  }
}`;
}

function page(title: string, style: string, body: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title><link rel="icon" href="data:,">
<style>body { margin: 0; font: 16px sans-serif; } .batch { height: ${BATCH_HEIGHT_PX}px; border-top: 1px solid #999; } ${style}</style>
</head><body>
${body}
</body></html>
`;
}

function windowFeedPage(feed: string): string {
  return page(feed, "", `<h1>${feed}</h1><div id="feed"></div><div id="sentinel" style="height: 1px"></div>
<script>${feedScript(feed)}
const sentinel = document.getElementById("sentinel");
new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) load(); }).observe(sentinel);
// And on scroll, as many feeds do: an observer only reports changes, so a jump to the new end made before the
// next rendering (the replay test's scrolling) would leave the sentinel "still visible" and the feed stuck.
addEventListener("scroll", () => { if (sentinel.getBoundingClientRect().top <= innerHeight) load(); });
</script>`);
}

/** 300, 350 or 400 ms, by batch: the delayed feeds' delay before their batch `n`. */
function delayMs(n: number): number {
  return 300 + (n % 3) * 50;
}

function debouncedFeedPage(): string {
  return page("debounced", "", `<h1>debounced</h1><div id="feed"></div><div id="sentinel" style="height: 1px"></div>
<script>${feedScript("debounced")}
// Kept at the start, called without "this" (lodash's debounce does both); the delay is delayMs(next).
const later = window.setTimeout, cancel = window.clearTimeout;
const sentinel = document.getElementById("sentinel");
let timer;
addEventListener("scroll", () => {
  cancel(timer);
  timer = later(() => { if (sentinel.getBoundingClientRect().top <= innerHeight + 200) load(); }, 300 + (next % 3) * 50);
});
load();
</script>`);
}

function divFeedPage(): string {
  return page("div-feed", "#scroller { height: 600px; overflow: auto; border: 1px solid #333; }", `<h1>div-feed</h1>
<div id="scroller"><div id="feed"></div><div id="sentinel" style="height: 1px"></div></div>
<script>${feedScript("div-feed")}
new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) load(); }, { root: document.getElementById("scroller") }).observe(document.getElementById("sentinel"));
</script>`);
}

function loadMorePage(): string {
  return page("load-more", ".batch { height: 1500px; }", `<h1>load-more</h1>
<p><a href="/elsewhere.html">Show more stories</a></p>
<form action="/submitted" method="post"><button>Show more</button></form>
<div id="feed"></div><button id="more" type="button">Load more</button>
<script>${feedScript("load-more")}
const more = document.getElementById("more");
more.addEventListener("click", () => load());
document.addEventListener("feedend", () => more.remove());
load();
</script>`);
}

function lazyPage(): string {
  const images = LAZY_IMAGES.map((src) => `<div style="height: 20000px"></div><img loading="lazy" src="${src}" width="40" height="40" alt="">`).join("\n");
  return page("lazy", "", `<h1>lazy images</h1>\n${images}`);
}

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40" fill="teal"/></svg>`;

export async function startInfiniteScrollSite(): Promise<InfiniteScrollSite> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const target = req.url ?? "/";
    requests.push(target);
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store", "Content-Length": Buffer.byteLength(body) });
      res.end(body);
    };
    const url = new URL(target, "http://127.0.0.1");
    const api = /^\/api\/([\w-]+)$/.exec(url.pathname);
    const feedPage = /^\/feed\/([\w-]+)\.html$/.exec(url.pathname);
    if (api && api[1] in FEED_SIZES) {
      const size = FEED_SIZES[api[1]];
      const batch = Number(url.searchParams.get("batch"));
      if (!Number.isInteger(batch) || batch < 1 || (size !== null && batch > size)) return send(404, "text/plain", "no such batch\n");
      if (api[1] === "slow-api") {
        setTimeout(() => send(200, "application/json", JSON.stringify({ text: batchText(api[1], batch), next: batch >= size! ? null : batch + 1 })), delayMs(batch));
        return;
      }
      const [x1, x2] = srcsetCandidates(batch);
      const image = api[1] === "srcset" ? { src: x1, srcset: `${x1} 1x, ${x2} 2x` } : undefined;
      return send(200, "application/json", JSON.stringify({ text: batchText(api[1], batch), next: size !== null && batch >= size ? null : batch + 1, image }));
    }
    if (feedPage && (feedPage[1] in WINDOW_FEEDS || feedPage[1] === "endless" || feedPage[1] === "slow-api" || feedPage[1] === "srcset")) return send(200, "text/html", windowFeedPage(feedPage[1]));
    if (feedPage && feedPage[1] === "debounced") return send(200, "text/html", debouncedFeedPage());
    if (url.pathname === "/div-feed.html") return send(200, "text/html", divFeedPage());
    if (url.pathname === "/load-more.html") return send(200, "text/html", loadMorePage());
    if (url.pathname === "/lazy.html") return send(200, "text/html", lazyPage());
    if (url.pathname === "/elsewhere.html") return send(200, "text/html", page("elsewhere", "", "<p>Another page</p>"));
    if (LAZY_IMAGES.includes(url.pathname) || /^\/img\/srcset-\d+-[12]x\.svg$/.test(url.pathname)) return send(200, "image/svg+xml", SVG);
    send(404, "text/plain", "not found\n");
  });
  server.keepAliveTimeout = 2_000;
  const { url, close } = await listenOnLoopback(server);
  return { url, requests, close };
}
