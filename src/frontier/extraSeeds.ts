import type { Cluster, Redis } from "ioredis";
import type { CrawlStateKeys } from "../state/stateKeys.js";

/** A seed added during the crawl at the URL a seed redirected to (--addRedirectedSeeds). */
export interface ExtraSeed {
  /** The seed (its id) whose scope rules the new seed takes. */
  origSeedId: number;
  url: string;
}

// Added once per URL, at the end of the list: an extra seed's index never changes, so its id is the
// same in every process of the crawl.
const ADD_LUA = `
-- KEYS: list, index; ARGV: url, json
local at = redis.call('HGET', KEYS[2], ARGV[1])
if at then return tonumber(at) end
local index = redis.call('RPUSH', KEYS[1], ARGV[2]) - 1
redis.call('HSET', KEYS[2], ARGV[1], index)
return index
`;

/** The crawl's extra seeds, shared through Redis by every process on the crawl. */
export class ExtraSeeds {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: CrawlStateKeys,
  ) {}

  /** Add a seed (or find it, added before); returns its index among the extra seeds. */
  async add(seed: ExtraSeed): Promise<number> {
    return (await this.redis.eval(ADD_LUA, 2, this.keys.extraSeeds, this.keys.extraSeedIndex, seed.url, JSON.stringify(seed))) as number;
  }

  /** The extra seeds from `from` on, in order. */
  async list(from = 0): Promise<ExtraSeed[]> {
    return (await this.redis.lrange(this.keys.extraSeeds, from, -1)).map((json) => JSON.parse(json) as ExtraSeed);
  }
}
