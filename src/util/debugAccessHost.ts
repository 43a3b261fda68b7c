import { existsSync } from "node:fs";
import { testSeamsFrom } from "./testSeams.js";

/**
 * Whether this process runs in a container (Docker writes /.dockerenv, Podman /run/.containerenv).
 * A test seam of `env` (TestSeams.containerMarkers) replaces those files, for tests run in a container.
 */
export function inContainer(env: NodeJS.ProcessEnv = process.env): boolean {
  const markers = testSeamsFrom(env).containerMarkers() ?? ["/.dockerenv", "/run/.containerenv"];
  return markers.some((marker) => marker !== "" && existsSync(marker));
}

/**
 * The address --debugAccessBrowser and --debugAccessRedis listen on: DEBUG_ACCESS_HOST if set (0.0.0.0 for
 * every interface); else every interface in a container, whose network is the boundary (as
 * browsertrix-crawler does), and loopback only on any other machine, where every interface may face a
 * network nobody meant to open the browser or the crawl state to.
 */
export function debugAccessHost(env: NodeJS.ProcessEnv = process.env): string {
  return env.DEBUG_ACCESS_HOST?.trim() || (inContainer(env) ? "0.0.0.0" : "127.0.0.1");
}
