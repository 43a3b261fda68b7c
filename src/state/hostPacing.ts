import type { Redis } from "ioredis";
import type { CrawlStateKeys } from "./keys.js";

// 0 = go now, else milliseconds to wait; the next turn is set in the same step.
const HOST_TURN_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local next = tonumber(redis.call('GET', KEYS[1]) or '0')
if next > now then return next - now end
redis.call('SET', KEYS[1], now + tonumber(ARGV[1]), 'PX', tonumber(ARGV[1]) * 2 + 1000)
return 0
`;

/** --minHostInterval: page loads on one host start at least this far apart, across all processes of the crawl. */
export class HostPacing {
  constructor(
    private readonly redis: Redis,
    private readonly keys: CrawlStateKeys,
  ) {}

  /** Ask for a turn to load a page from `host`; returns 0 (go) or how many ms to wait before asking again. */
  async turn(host: string, intervalMs: number): Promise<number> {
    return (await this.redis.eval(HOST_TURN_LUA, 1, this.keys.hostTurn(host), intervalMs)) as number;
  }
}
