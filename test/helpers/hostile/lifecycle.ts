import type { HostileRoutes } from "./route.js";

/**
 * Hostile routes: pages that judge their own content (browsertrix-crawler's --failOnContentCheck).
 * - logged-out: at load and every 100 ms after, calls window.__bx_contentCheckFailed("logged out"), if the
 *   crawler gave it the function (as a site-specific behavior seeing a login wall would); links on.
 */
const P = "/hostile/lifecycle";

export const lifecycleRoutes: HostileRoutes = {
  [`${P}/logged-out`]: (_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(`<!doctype html><html><head><title>Please log in</title><script>
const check = () => { if (typeof window.__bx_contentCheckFailed === "function") window.__bx_contentCheckFailed("logged out"); };
addEventListener("load", () => { check(); setInterval(check, 100); });
</script></head><body><h1>Please log in</h1><a href="/page/1">page 1</a></body></html>`);
  },
};
