import type { IncomingMessage, ServerResponse } from "node:http";
import { createGzip } from "node:zlib";
import type { HostileRoutes, HostileSiteInfo } from "./route.js";

/** The huge body's bytes: byte i is i % 251, so any prefix can be checked without keeping the body. */
export function hugeBodyPrefix(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = i % 251;
  return bytes;
}
/** Default size of the huge body: 3 GiB, made on the fly (never on disk). `?mb=N` asks for N MiB. */
export const HUGE_BODY_DEFAULT_MB = 3072;
/** The gzip bomb's decoded size (its compressed size is about a thousandth of it). */
export const GZIP_BOMB_DECODED = 300 * 1024 * 1024;
/** The bomb whose second answer is a 503 (bomb-once.js): read through the browser after all (gzipped past 100 KB: streamed). */
export const GZIP_BOMB_ONCE_DECODED = 120 * 1024 * 1024;
/** The hits key counting whole (non-range) GETs of a path: `${path} (whole)`. */
export const wholeGets = (site: Pick<HostileSiteInfo, "hits">, path: string) => site.hits.get(`${path} (whole)`) ?? 0;

const PATTERN = hugeBodyPrefix(251 * 4096);
/** The cacheable script's body (larger than the dedupe minimum, not that it matters here). */
export const CACHED_SCRIPT = "document.documentElement.dataset.cached = 'yes';\n" + "// cached\n".repeat(100);

const page = (title: string, body: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${body}<ul><li><a href="/hostile/bodies/after-${title}.html">after</a></li></ul></body></html>`;

/** Write `length` bytes of the pattern from `start`, as fast as the client reads them (never buffered). */
function sendPattern(res: ServerResponse, start: number, length: number): void {
  let offset = start;
  const end = start + length;
  const pump = () => {
    while (offset < end) {
      const from = offset % 251;
      const chunk = PATTERN.subarray(from, from + Math.min(end - offset, PATTERN.length - 251));
      offset += chunk.length;
      if (!res.write(chunk)) return void res.once("drain", pump);
    }
    res.end();
  };
  res.on("close", () => (offset = end + 1));
  pump();
}

/** A body of `?mb=N` MiB (default 3 GiB) made on the fly; answers Range requests with 206. */
function hugeBody(req: IncomingMessage, res: ServerResponse, site: HostileSiteInfo, contentType: string): void {
  const url = new URL(req.url ?? "/", "http://x");
  const size = Number(url.searchParams.get("mb") ?? HUGE_BODY_DEFAULT_MB) * 1024 * 1024;
  const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
  if (!range) {
    const key = `${url.pathname} (whole)`;
    site.hits.set(key, (site.hits.get(key) ?? 0) + 1);
    res.writeHead(200, { "content-type": contentType, "content-length": String(size), "accept-ranges": "bytes" });
    return sendPattern(res, 0, size);
  }
  const start = Number(range[1]);
  const last = range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
  res.writeHead(206, { "content-type": contentType, "content-length": String(last - start + 1), "content-range": `bytes ${start}-${last}/${size}`, "accept-ranges": "bytes" });
  sendPattern(res, start, last - start + 1);
}

const bombs = new Map<number, Promise<Buffer>>();
/** A script that decodes to `decoded` bytes: a comment of spaces, gzipped (about a thousandth of it); made once. */
function gzipBomb(decoded: number): Promise<Buffer> {
  const made = bombs.get(decoded);
  if (made) return made;
  const bomb = new Promise<Buffer>((resolve, reject) => {
    const gzip = createGzip({ level: 9 });
    const parts: Buffer[] = [];
    gzip.on("data", (d: Buffer) => parts.push(d));
    gzip.on("end", () => resolve(Buffer.concat(parts)));
    gzip.on("error", reject);
    const head = Buffer.from("/* a comment of 300 MiB */ document.title = 'bomb';\n//");
    const spaces = Buffer.alloc(1024 * 1024, 0x20);
    gzip.write(head);
    let left = decoded - head.length;
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, spaces.length);
        left -= n;
        if (!gzip.write(spaces.subarray(0, n))) return void gzip.once("drain", pump);
      }
      gzip.end();
    };
    pump();
  });
  bombs.set(decoded, bomb);
  return bomb;
}

/**
 * Hostile routes: bodies too large to keep. A 3 GiB body made on the fly (fetched by a page's script,
 * and played by a <video>, which asks for ranges: 206), and a gzip bomb (a script of ~300 KB that
 * decodes to 300 MiB); each page links to one plain page.
 */
export const bodiesRoutes: HostileRoutes = {
  "/hostile/bodies/huge.html": (req, res) => {
    const mb = new URL(req.url ?? "/", "http://x").searchParams.get("mb") ?? String(HUGE_BODY_DEFAULT_MB);
    res.writeHead(200, { "content-type": "text/html" }).end(page("huge", `<script>fetch("/hostile/bodies/huge.bin?mb=${mb}").then((r) => r.arrayBuffer()).catch(() => undefined);</script>`));
  },
  "/hostile/bodies/huge.bin": (req, res, site) => hugeBody(req, res, site, "application/octet-stream"),
  "/hostile/bodies/video.html": (req, res) => {
    const mb = new URL(req.url ?? "/", "http://x").searchParams.get("mb") ?? String(HUGE_BODY_DEFAULT_MB);
    res.writeHead(200, { "content-type": "text/html" }).end(page("video", `<video src="/hostile/bodies/video.mp4?mb=${mb}" preload="auto" autoplay muted></video>`));
  },
  "/hostile/bodies/video.mp4": (req, res, site) => hugeBody(req, res, site, "video/mp4"),
  "/hostile/bodies/bomb.html": (_req, res) => {
    res.writeHead(200, { "content-type": "text/html" }).end(page("bomb", `<script src="/hostile/bodies/bomb.js"></script>`));
  },
  "/hostile/bodies/bomb.js": (_req, res) => {
    void gzipBomb(GZIP_BOMB_DECODED).then((gz) => {
      res.writeHead(200, { "content-type": "application/javascript", "content-encoding": "gzip", "content-length": String(gz.length) }).end(gz);
    });
  },
  // A bomb whose second answer (the crawler's own fetch, to decode it outside the browser) is a 503: its
  // body is then read through the browser after all.
  "/hostile/bodies/bomb-once.html": (_req, res) => {
    res.writeHead(200, { "content-type": "text/html" }).end(page("bomb-once", `<script src="/hostile/bodies/bomb-once.js"></script>`));
  },
  "/hostile/bodies/bomb-once.js": (_req, res, site) => {
    if ((site.hits.get("/hostile/bodies/bomb-once.js") ?? 0) > 1) return void res.writeHead(503, { "content-type": "text/plain" }).end("busy");
    void gzipBomb(GZIP_BOMB_ONCE_DECODED).then((gz) => {
      res.writeHead(200, { "content-type": "application/javascript", "content-encoding": "gzip", "content-length": String(gz.length) }).end(gz);
    });
  },
  // A script the browser may cache for an hour, loaded by two pages: its first body read is made to fail
  // (WARC_CRAWLER_TEST_FAIL_BODY_ONCE=cached.js) and the direct fetch standing in for it gets a 503, so
  // only a second load from the network, not from the browser's cache, can put it in the archive.
  "/hostile/bodies/cache-a.html": (_req, res) => {
    res.writeHead(200, { "content-type": "text/html" }).end(page("cache-a", `<script src="/hostile/bodies/cached.js"></script><a href="/hostile/bodies/cache-b.html">b</a>`));
  },
  "/hostile/bodies/cache-b.html": (_req, res) => {
    res.writeHead(200, { "content-type": "text/html" }).end(page("cache-b", `<script src="/hostile/bodies/cached.js"></script>`));
  },
  "/hostile/bodies/cached.js": (_req, res, site) => {
    if (site.hits.get("/hostile/bodies/cached.js") === 2) {
      res.writeHead(503, { "content-type": "text/plain" }).end("busy");
      return;
    }
    res.writeHead(200, { "content-type": "application/javascript", "cache-control": "max-age=3600" }).end(CACHED_SCRIPT);
  },
  ...Object.fromEntries(
    ["huge", "video", "bomb", "bomb-once", "cache-a", "cache-b"].map((name) => [`/hostile/bodies/after-${name}.html`, (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { "content-type": "text/html" }).end(page(`after-${name}`, "").replace(/<ul>.*<\/ul>/, ""));
    }] as const),
  ),
};
