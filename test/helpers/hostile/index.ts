import { addressesRoutes } from "./addresses.js";
import { bodiesRoutes } from "./bodies.js";
import { browsertrixRoutes } from "./browsertrix.js";
import { lifecycleRoutes } from "./lifecycle.js";
import { liveViewRoutes } from "./liveView.js";
import { pacingRoutes } from "./pacing.js";
import { pageLoadRoutes } from "./pageLoad.js";
import type { HostileRoutes } from "./route.js";
import { streamsRoutes } from "./streams.js";
import { uploadRoutes } from "./upload.js";

export type { HostileHandler, HostileRoutes, HostileSiteInfo } from "./route.js";

/**
 * Every hostile route the faulty site serves, by exact path, one table per topic (each topic's file
 * owns its paths; a path may appear in one table only):
 * - streams: never-ending responses (SSE, long-poll, endless chunked bodies), slow drips
 * - bodies: huge, lying-length and gzip-bomb bodies, 206s
 * - addresses: redirects to forbidden addresses, redirecting seeds, query-order twins, popups
 * - pacing: rate limits (429/503 with Retry-After)
 * - upload: a heavy page whose WACZ takes the multipart upload path
 * - browsertrix: browsertrix-crawler compatibility (a seed list served over HTTP)
 * - pageLoad: late images, never-ending requests, echoes of language, user agent and window width
 * - lifecycle: a page failing its content check (--failOnContentCheck)
 * - liveView: pages slow enough to be watched live (--screencastPort), one failing
 */
export function hostileRoutes(): HostileRoutes {
  const tables = [streamsRoutes, bodiesRoutes, addressesRoutes, pacingRoutes, uploadRoutes, browsertrixRoutes, pageLoadRoutes, lifecycleRoutes, liveViewRoutes];
  const all: HostileRoutes = {};
  for (const table of tables) {
    for (const [path, handler] of Object.entries(table)) {
      if (all[path]) throw new Error(`hostile route ${path} is defined twice`);
      all[path] = handler;
    }
  }
  return all;
}
