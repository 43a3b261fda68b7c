import { existsSync } from "node:fs";

/** Whether this process runs in a container (Docker writes /.dockerenv, Podman /run/.containerenv). */
export function inContainer(): boolean {
  return existsSync("/.dockerenv") || existsSync("/run/.containerenv");
}

/**
 * The address --debugAccessBrowser and --debugAccessRedis listen on: DEBUG_ACCESS_HOST if set (0.0.0.0 for
 * every interface); else every interface in a container, whose network is the boundary (as
 * browsertrix-crawler does), and loopback only on any other machine, where every interface may face a
 * network nobody meant to open the browser or the crawl state to.
 */
export function debugAccessHost(env: NodeJS.ProcessEnv = process.env): string {
  return env.DEBUG_ACCESS_HOST?.trim() || (inContainer() ? "0.0.0.0" : "127.0.0.1");
}

/** Whether an address is loopback only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  return /^127\./.test(host) || host === "::1" || host === "[::1]" || host.toLowerCase() === "localhost";
}
