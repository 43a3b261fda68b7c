import type { Cluster, Redis } from "ioredis";
import type { CrawlStateKeys } from "../state/stateKeys.js";

// 0 = go now, else milliseconds to wait; the next turn is set in the same step (with an interval).
const HOST_TURN_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local next = tonumber(redis.call('GET', KEYS[1]) or '0')
if next > now then return next - now end
local interval = tonumber(ARGV[1])
if interval > 0 then redis.call('SET', KEYS[1], now + interval, 'PX', interval * 2 + 1000) end
return 0
`;

// Push the host's next turn to at least now + ARGV[1] ms (never earlier than already set).
const BACK_OFF_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ = now + tonumber(ARGV[1])
local next = tonumber(redis.call('GET', KEYS[1]) or '0')
if next >= until_ then return next - now end
redis.call('SET', KEYS[1], until_, 'PX', tonumber(ARGV[1]) + 1000)
return tonumber(ARGV[1])
`;

/**
 * When page loads on a host may start, across all processes of the crawl: --minHostInterval apart,
 * and not before a rate-limited host's Retry-After has passed.
 */
export class HostPacing {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: CrawlStateKeys,
  ) {}

  /** Ask for a turn to load a page from `host`; returns 0 (go) or how many ms to wait before asking again. */
  async turn(host: string, intervalMs: number): Promise<number> {
    return (await this.redis.eval(HOST_TURN_LUA, 1, this.keys.hostTurn(host), intervalMs)) as number;
  }

  /** The host asked us to wait (a rate limit): no page load on it for `delayMs`; returns the ms it is now backed off for. */
  async backOff(host: string, delayMs: number): Promise<number> {
    return (await this.redis.eval(BACK_OFF_LUA, 1, this.keys.hostTurn(host), Math.max(1, Math.round(delayMs)))) as number;
  }
}
