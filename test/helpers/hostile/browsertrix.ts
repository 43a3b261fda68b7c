import type { HostileRoutes } from "./route.js";

/** Hostile routes: browsertrix-crawler compatibility (a seed list served over HTTP, as --seedFile URL). */
const P = "/hostile/btx";
export const SEED_LIST = `${P}/seeds.txt`;

export const browsertrixRoutes: HostileRoutes = {
  // Two of the site's pages, a comment and a blank line: what a --seedFile URL serves.
  [SEED_LIST]: (_req, res, site) => {
    res.writeHead(200, { "content-type": "text/plain" }).end(`# seeds\n${site.url}/page/1\n\n${site.url}/page/2\n`);
  },
};
