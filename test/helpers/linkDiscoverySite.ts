import { createServer, type Server } from "node:http";
import { listenOnLoopback } from "../../fixtures/loopback.js";

/**
 * A loopback site for --extractFormLinks and --extractFeedLinks. The crawl's scope is the prefix /site/;
 * /other/ is out of it. Pages reached only through a form or a feed are linked from nowhere else.
 */
export interface LinkDiscoverySite {
  url: string;
  close(): Promise<void>;
}

// No favicon request: the archives hold exactly what the pages fetch.
const page = (head: string, body: string) => `<!doctype html><html><head><title>t</title><link rel="icon" href="data:,">${head}</head><body>${body}</body></html>`;

function routes(origin: string): Record<string, [type: string, body: string]> {
  return {
    "/site/": ["text/html", page("", `<a href="/site/forms.html">forms</a> <a href="/site/feeds.html">feeds</a>`)],
    "/site/forms.html": ["text/html", page("", `
      <form action="/site/search?stale=1">
        <input name="q" value="cats and dogs">
        <input type="checkbox" name="safe" checked>
        <input type="checkbox" name="images" value="yes">
        <select name="sort"><option value="relevance">relevance</option><option value="date" selected>date</option><option value="old" disabled>old</option></select>
        <input type="hidden" name="lang" value="en">
        <input type="file" name="upload">
        <input type="text" name="off" value="x" disabled>
        <button name="go" value="1">search</button>
      </form>
      <form method="post" action="/site/post-target"><input name="q" value="p"></form>
      <form action="/site/login-target"><input name="user" value="u"><input type="password" name="pw"></form>
      <form action="/other/search"><input name="q" value="elsewhere"></form>
      <form action="javascript:void(0)"><input name="q" value="js"></form>
      <form method="GET"><select name="page" onchange="this.form.submit()"><option>a</option><option>b</option></select></form>`)],
    "/site/feeds.html": ["text/html", page(`
      <link rel="alternate" type="application/rss+xml" href="/site/feed.rss">
      <link rel="alternate" type="application/atom+xml" title="atom" href="feed.atom">
      <link rel="alternate" type="application/feed+json" href="/site/feed.json">
      <link rel="alternate" type="application/rss+xml" href="/site/feed.xml">
      <link rel="alternate" hreflang="fr" href="/site/fr/">
      <link rel="alternate" type="application/rss+xml" href="/other/feed.rss">`, `<p>feeds</p>`)],
    "/site/feed.rss": ["application/rss+xml", `<?xml version="1.0"?><rss version="2.0"><channel><title>f</title><link>${origin}/site/</link>
      <item><title>in</title><link>${origin}/site/from-rss</link></item>
      <item><title>out</title><link>${origin}/other/from-rss</link></item>
      <item><title>guid</title><guid>${origin}/site/from-rss-guid</guid></item>
      <item><title>not a permalink</title><guid isPermaLink="false">${origin}/site/not-a-permalink</guid></item>
    </channel></rss>`],
    "/site/feed.atom": ["application/atom+xml", `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>f</title><link href="/site/"/>
      <entry><title>in</title><link rel="alternate" href="/site/from-atom"/><link rel="enclosure" href="/site/podcast.mp3"/></entry>
      <entry><title>no rel</title><link href="from-atom-bare"/></entry>
      <entry><title>out</title><link href="${origin}/other/from-atom"/></entry>
    </feed>`],
    "/site/feed.json": ["application/feed+json", JSON.stringify({ version: "https://jsonfeed.org/version/1.1", title: "f", items: [{ id: "1", url: `${origin}/site/from-json` }, { id: "2", url: `${origin}/other/from-json` }] })],
    // RSS sent as text/xml: Chromium shows it in its XML viewer.
    "/site/feed.xml": ["text/xml", `<?xml version="1.0"?><rss version="2.0"><channel><title>f</title><item><link>${origin}/site/from-xml</link></item></channel></rss>`],
  };
}

export async function startLinkDiscoverySite(): Promise<LinkDiscoverySite> {
  let table: Record<string, [string, string]> = {};
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const [type, body] = table[path] ?? ["text/html", page("", `<p>${path}</p>`)];
    res.writeHead(200, { "content-type": type, "cache-control": "no-store" }).end(body);
  });
  const listener = await listenOnLoopback(server);
  table = routes(listener.url);
  return { url: listener.url, close: listener.close };
}
