import { request } from "undici";

const LIST_DEADLINE_MS = 5000;

/** A tab as the browser's DevTools HTTP endpoint lists it (the fields read here). */
export interface DevToolsTarget {
  id: string;
  /** The favicon the browser shows for the tab, once it has fetched and decoded one. */
  faviconUrl?: string;
}

/**
 * The browser's targets from its DevTools HTTP endpoint (`/json/list`, on the host and port of its WebSocket
 * endpoint): the browser's own loopback port, not the web, so no address policy or header rule applies. What
 * it lists that no DevTools command tells: each tab's favicon.
 */
export async function devToolsTargets(browserWsEndpoint: string): Promise<DevToolsTarget[]> {
  const { host } = new URL(browserWsEndpoint);
  const { statusCode, body } = await request(`http://${host}/json/list`, { headersTimeout: LIST_DEADLINE_MS, bodyTimeout: LIST_DEADLINE_MS });
  if (statusCode !== 200) {
    await body.dump();
    throw new Error(`the browser's DevTools endpoint answered HTTP ${statusCode}`);
  }
  const listed: unknown = await body.json();
  if (!Array.isArray(listed)) throw new Error("the browser's DevTools endpoint listed no targets");
  return listed.flatMap((entry: unknown) => {
    if (typeof entry !== "object" || entry === null) return [];
    const { id, faviconUrl } = entry as Record<string, unknown>;
    if (typeof id !== "string") return [];
    return [{ id, ...(typeof faviconUrl === "string" && faviconUrl ? { faviconUrl } : {}) }];
  });
}
