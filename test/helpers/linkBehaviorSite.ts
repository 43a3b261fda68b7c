import { createServer, type Server } from "node:http";
import { listenOnLoopback } from "../../fixtures/loopback.js";

/**
 * A loopback site for --selectLinks, --clickSelector/autoclick, --customBehaviors and
 * --alwaysAddBehaviorLinks: links only some selectors find (also inside a frame), elements whose click
 * handlers fetch or route, and a behavior file served over HTTP.
 */
export interface LinkBehaviorSite {
  url: string;
  /** Paths requested so far. */
  hits: string[];
  close(): Promise<void>;
}

// No favicon request: the archives hold exactly what the pages and their behaviors fetch.
const page = (body: string) => `<!doctype html><html><head><title>t</title><link rel="icon" href="data:,"></head><body>${body}</body></html>`;

/** A behavior class (browsertrix-behaviors' form) for the page `path`: fetches `fetches`, adds `addsLink`. */
export function behaviorClass(id: string, path: string, fetches: string, addsLink?: string): string {
  return `class ${id} {
  static id = "${id}";
  static isMatch() { return location.pathname === "${path}"; }
  static init() { return {}; }
  async* run(ctx) {
    await fetch("${fetches}");
    ${addsLink ? `await ctx.Lib.addLink(location.origin + "${addsLink}");` : ""}
    yield "${id} ran";
  }
}
`;
}

const ROUTES: Record<string, [type: string, body: string]> = {
  "/links/": ["text/html", page(`
    <a href="/links/via-a">a</a>
    <div data-href="/links/via-data">div</div>
    <span data-href="/links/via-span">span</span>
    <iframe src="/links/frame.html"></iframe>`)],
  "/links/frame.html": ["text/html", page(`<a href="/links/via-frame-a">a</a><div data-href="/links/via-frame-data">div</div>`)],
  "/click/": ["text/html", page(`
    <a href="/click/route" onclick="event.preventDefault(); history.pushState({}, '', '/click/route'); fetch('/click/route-data.json')">route</a>
    <a href="/click/next">next</a>
    <button onclick="fetch('/click/button.json')">more</button>`)],
  // A hash-routed app: each route (#/a, #/b) loads its own data when the page opens on it.
  "/hash/": ["text/html", page(`
    <a href="#/a">a</a> <a href="#/b">b</a>
    <script>fetch("/hash/data-" + (location.hash.slice(2) || "home") + ".json")</script>`)],
  "/custom/a": ["text/html", page(`<p>a</p>`)],
  "/custom/b": ["text/html", page(`<p>b</p>`)],
  "/custom/c": ["text/html", page(`<p>c</p>`)],
  "/custom/d": ["text/html", page(`<p>d</p>`)],
  "/behaviors/broken.js": ["application/javascript", "class Broken { static id = ; }"],
  "/behaviors/from-url.js": ["application/javascript", behaviorClass("FromUrl", "/custom/c", "/custom/from-url.json")],
};

export async function startLinkBehaviorSite(): Promise<LinkBehaviorSite> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    hits.push(path);
    const route = ROUTES[path];
    if (route) {
      const [type, body] = route;
      res.writeHead(200, { "content-type": type, "cache-control": "no-store" }).end(body);
    } else if (path.endsWith(".json")) {
      res.writeHead(200, { "content-type": "application/json" }).end(`{"path":"${path}"}`);
    } else if (path.startsWith("/missing")) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    } else {
      res.writeHead(200, { "content-type": "text/html" }).end(page(`<p>${path}</p>`));
    }
  });
  const { url, close } = await listenOnLoopback(server);
  return { url, hits, close };
}
