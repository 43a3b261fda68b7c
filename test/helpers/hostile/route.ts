import type { IncomingMessage, ServerResponse } from "node:http";

/** What a hostile route may know of the site serving it. */
export interface HostileSiteInfo {
  /** The site's origin, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Requests received per path so far. */
  hits: Map<string, number>;
}

/**
 * One misbehaving resource of the hostile site. Keyed by exact path in a topic's table; a handler may
 * keep the response open forever (the site destroys open sockets when it closes).
 */
export type HostileHandler = (req: IncomingMessage, res: ServerResponse, site: HostileSiteInfo) => void;

export type HostileRoutes = Record<string, HostileHandler>;
