import type { ServerResponse } from "node:http";
import type { HostileRoutes } from "./route.js";

/** Hostile routes: how pages load (--waitUntil, --netIdleMaxRequests, --lang, --userAgentSuffix, --mobileDevice, --extraChromeArgs). */
const P = "/hostile/pageload";

export const PAGE_LOAD = {
  /** An image that arrives 4 s late: the load event waits for it, DOMContentLoaded does not. */
  slowImagePage: `${P}/slow-image.html`,
  slowImage: `${P}/slow.png`,
  /** Two requests that never end and, 5 s after load, one more: only networkidle0 is still waiting then (2 s was
   *  too close on a busy machine: a networkidle2 page was sometimes still open when it came). */
  busyPage: `${P}/busy.html`,
  late: `${P}/late.txt`,
  /** One request that never ends and, 3 s after load, one more. */
  oneHangPage: `${P}/one-hang.html`,
  lateAfterHang: `${P}/late-after-hang.txt`,
  hang: `${P}/hang`,
  /** Echoes the Accept-Language it got into the page; its script asks for an URL naming navigator.language. */
  langPage: `${P}/lang.html`,
  echo: `${P}/echo`,
  /** Its script asks for an URL naming the window's width and touch; a <picture> picks an image by media query. */
  devicePage: `${P}/device.html`,
  width: `${P}/width`,
  small: `${P}/small.png`,
  large: `${P}/large.png`,
  /** A plain page with a stylesheet and an image. */
  imagePage: `${P}/image.html`,
  image: `${P}/pic.png`,
  css: `${P}/style.css`,
} as const;

/** How long each never-ending request was held open by the browser (ms), in the order they ended. */
export const hangHeld: number[] = [];

const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex",
);

const html = (res: ServerResponse, body: string) =>
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(`<!doctype html><html>${body}</html>`);
const text = (res: ServerResponse, body: string) => res.writeHead(200, { "content-type": "text/plain" }).end(body);
const png = (res: ServerResponse) => res.writeHead(200, { "content-type": "image/png" }).end(PNG);

export const pageLoadRoutes: HostileRoutes = {
  [PAGE_LOAD.slowImagePage]: (_req, res) => html(res, `<title>slow image</title><body><img src="${PAGE_LOAD.slowImage}" width="1" height="1"></body>`),
  [PAGE_LOAD.slowImage]: (_req, res) => void setTimeout(() => png(res), 4000),
  [PAGE_LOAD.busyPage]: (_req, res) =>
    html(res, `<title>busy</title><body><script>
      addEventListener("load", () => {
        fetch("${PAGE_LOAD.hang}?n=1").catch(() => {});
        fetch("${PAGE_LOAD.hang}?n=2").catch(() => {});
        setTimeout(() => fetch("${PAGE_LOAD.late}").catch(() => {}), 5000);
      });
    </script></body>`),
  [PAGE_LOAD.late]: (_req, res) => text(res, "late"),
  [PAGE_LOAD.oneHangPage]: (_req, res) =>
    html(res, `<title>one hang</title><body><script>
      addEventListener("load", () => {
        fetch("${PAGE_LOAD.hang}?n=1").catch(() => {});
        setTimeout(() => fetch("${PAGE_LOAD.lateAfterHang}").catch(() => {}), 3000);
      });
    </script></body>`),
  [PAGE_LOAD.lateAfterHang]: (_req, res) => text(res, "late after hang"),
  // Never answers; records how long the browser kept it open (until the page was left or the tab closed).
  [PAGE_LOAD.hang]: (req) => {
    const start = Date.now();
    req.socket.once("close", () => hangHeld.push(Date.now() - start));
  },
  [PAGE_LOAD.langPage]: (req, res) =>
    html(res, `<title>lang</title><body><p id="accept-language">${String(req.headers["accept-language"] ?? "none").replace(/[<&]/g, "")}</p><script>
      fetch("${PAGE_LOAD.echo}?nav=" + encodeURIComponent(navigator.language)).catch(() => {});
    </script><img src="${PAGE_LOAD.image}" width="1" height="1"></body>`),
  [PAGE_LOAD.echo]: (req, res) => text(res, `accept-language: ${req.headers["accept-language"] ?? "none"}`),
  [PAGE_LOAD.devicePage]: (_req, res) =>
    html(res, `<head><title>device</title><meta name="viewport" content="width=device-width, initial-scale=1"></head><body>
      <picture><source media="(max-width: 600px)" srcset="${PAGE_LOAD.small}"><img src="${PAGE_LOAD.large}" width="1" height="1"></picture>
      <script>fetch("${PAGE_LOAD.width}?w=" + innerWidth + "&touch=" + ("ontouchstart" in window)).catch(() => {});</script></body>`),
  [PAGE_LOAD.width]: (_req, res) => text(res, "width"),
  [PAGE_LOAD.small]: (_req, res) => png(res),
  [PAGE_LOAD.large]: (_req, res) => png(res),
  [PAGE_LOAD.imagePage]: (_req, res) =>
    html(res, `<head><title>image</title><link rel="stylesheet" href="${PAGE_LOAD.css}"></head><body><img src="${PAGE_LOAD.image}" width="1" height="1"></body>`),
  [PAGE_LOAD.image]: (_req, res) => png(res),
  [PAGE_LOAD.css]: (_req, res) => res.writeHead(200, { "content-type": "text/css" }).end("body { color: black; }"),
};
