import type { IncomingMessage, ServerResponse } from "node:http";
import type { HostileRoutes } from "./route.js";

/**
 * Hostile routes: addresses the crawler must not reach, slow drips of the files it reads for itself
 * (robots.txt, sitemaps), popups.
 *
 * The forbidden server is a second faulty site on 127.0.0.2, which a test tells the crawler to treat as
 * link-local (CRAWLER_TEST_LINK_LOCAL) and names evil.test (CRAWLER_TEST_HOSTS); pages get its port as
 * `?to=<port>`. The host asked for matters to /robots.txt (the one fixed path here): a hostile site on
 * 127.0.0.3 drips it, robots-to-<port>.test redirects it to the forbidden server; any other host has
 * none (404), as the plain hostile site always had.
 */
const P = "/hostile/addresses";

const html = (res: ServerResponse, body: string) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(`<!doctype html><html>${body}</html>`);
const xml = (res: ServerResponse, body: string) => res.writeHead(200, { "content-type": "application/xml" }).end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
const redirect = (res: ServerResponse, location: string) => res.writeHead(302, { location, "content-type": "text/plain" }).end("moved");
/** The forbidden server's port, as given to the page. */
const forbiddenPort = (req: IncomingMessage) => new URL(req.url ?? "/", "http://x").searchParams.get("to") ?? "9";
const ownPort = (req: IncomingMessage) => (req.headers.host ?? "").split(":")[1] ?? "80";

/** Send `head`, then one more byte every second for as long as the client listens. */
function drip(res: ServerResponse, contentType: string, head: string, byte: string): void {
  res.writeHead(200, { "content-type": contentType });
  res.write(head);
  const timer = setInterval(() => res.write(byte), 1000);
  res.on("close", () => clearInterval(timer));
}

/** A window that was opened as a popup (its name says so) polls the site from 2 s on; loaded as a page, it does not. */
const popupPage = (n: number) => `<title>popup ${n}</title><p>popup ${n}</p><script>
  if (window.name.startsWith("popup-")) setTimeout(() => setInterval(() => fetch("${P}/popup-poll-${n}").catch(() => undefined), 250), 2000);
</script>`;

export const addressesRoutes: HostileRoutes = {
  // Links, a redirect, subresources and a fetch() aimed at forbidden addresses, and schemes never fetched.
  [`${P}/forbidden-links`]: (req, res) => {
    const to = forbiddenPort(req);
    const own = ownPort(req);
    html(res, `<title>forbidden links</title><body>
      <a href="http://evil.test:${to}${P}/secret">by name</a>
      <a href="http://127.0.0.2:${to}${P}/secret-ip">by address</a>
      <a href="http://[::ffff:127.0.0.2]:${to}${P}/secret-mapped">IPv4-mapped IPv6</a>
      <a href="http://metadata.google.internal:${to}/computeMetadata/v1/">metadata name</a>
      <a href="${P}/redirect-out?to=${to}">a redirect to a forbidden address</a>
      <a href="http://robots-to-${to}.test:${own}${P}/listed-page">robots.txt redirects to a forbidden address</a>
      <a href="file:///etc/passwd">file</a> <a href="javascript:alert(1)">js</a> <a href="data:text/html,hello">data</a>
      <img src="http://evil.test:${to}${P}/pixel.png" width="1" height="1">
      <iframe src="http://127.0.0.2:${to}${P}/frame"></iframe>
      <script>fetch("http://evil.test:${to}${P}/xhr").catch(() => undefined)</script>
    </body>`);
  },
  [`${P}/redirect-out`]: (req, res) => redirect(res, `http://evil.test:${forbiddenPort(req)}${P}/behind-redirect`),
  [`${P}/listed-page`]: (_req, res) => html(res, `<title>listed</title><p>a page a sitemap lists</p>`),
  // A sitemap index whose children are on a forbidden host, redirect there, or list a page there.
  [`${P}/sitemap-index.xml`]: (req, res) => {
    const to = forbiddenPort(req);
    const children = [`http://evil.test:${to}/sitemap.xml`, `${P}/sitemap-redirect.xml?to=${to}`, `${P}/sitemap-pages.xml?to=${to}`];
    xml(res, `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${children.map((c) => `<sitemap><loc>${c.startsWith("/") ? `http://${req.headers.host}${c}` : c}</loc></sitemap>`).join("")}</sitemapindex>`);
  },
  [`${P}/sitemap-redirect.xml`]: (req, res) => redirect(res, `http://127.0.0.2:${forbiddenPort(req)}/sitemap.xml`),
  [`${P}/sitemap-pages.xml`]: (req, res) => {
    const pages = [`http://${req.headers.host}${P}/listed-page`, `http://evil.test:${forbiddenPort(req)}${P}/listed-secret`];
    xml(res, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${pages.map((p) => `<url><loc>${p}</loc></url>`).join("")}</urlset>`);
  },
  "/robots.txt": (req, res) => {
    const host = (req.headers.host ?? "").split(":")[0];
    if (host === "127.0.0.3") return drip(res, "text/plain", "User-agent: *\n", "#");
    const to = /^robots-to-(\d+)\.test$/.exec(host)?.[1];
    if (to) return redirect(res, `http://evil.test:${to}/robots.txt`);
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  },
  // A page linking to the host whose robots.txt drips (one byte a second, never ending): 127.0.0.3:<to>.
  [`${P}/drip-links`]: (req, res) => {
    html(res, `<title>drip links</title><a href="http://127.0.0.3:${forbiddenPort(req)}${P}/listed-page">robots.txt drips</a>`);
  },
  [`${P}/sitemap-drip.xml`]: (_req, res) => drip(res, "application/xml", `<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n`, " "),
  // A page that calls window.open three times (plainly, without an opener, from a fresh iframe), opens a
  // fourth window by clicking a link with a target, and links on (one link added by a script declaring its own
  // top-level \`open\`).
  [`${P}/popups`]: (_req, res) => {
    html(res, `<title>popups</title><body><a href="/page/1">1</a> <a href="/page/2">2</a> <a href="/page/3">3</a>
      <a id="fourth" href="${P}/popup-4" target="popup-4">4</a><script>
      window.open("${P}/popup-1", "popup-1");
      window.open("${P}/popup-2", "popup-2", "noopener");
      const frame = document.createElement("iframe");
      document.body.appendChild(frame);
      frame.contentWindow.open("${P}/popup-3", "popup-3");
      document.getElementById("fourth").click();
    </script><script>
      // A site's own top-level \`open\` (a SyntaxError beside a non-configurable window.open): its script still runs.
      const open = "${P}/own-open";
      document.body.append(Object.assign(document.createElement("a"), { href: open, textContent: "own open" }));
    </script></body>`);
  },
  [`${P}/own-open`]: (_req, res) => html(res, "<title>own open</title><p>linked by a script with its own top-level open</p>"),
  [`${P}/popup-1`]: (_req, res) => html(res, popupPage(1)),
  [`${P}/popup-2`]: (_req, res) => html(res, popupPage(2)),
  [`${P}/popup-3`]: (_req, res) => html(res, popupPage(3)),
  [`${P}/popup-4`]: (_req, res) => html(res, popupPage(4)),
  ...Object.fromEntries([1, 2, 3, 4].map((n) => [`${P}/popup-poll-${n}`, (_req: IncomingMessage, res: ServerResponse) => void res.writeHead(204).end()])),
};
