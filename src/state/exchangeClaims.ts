import type { Cluster, Redis } from "ioredis";
import type { Membership } from "./membership/membership.js";
import { ownerScript } from "../ownership/ownerRule.js";
import { RecentlyUsed } from "../util/recentlyUsed.js";

/** What tells exchanges apart: status, method and URL (and the request body's digest, for other methods than GET and HEAD). */
export interface ExchangeIdentity {
  status: number;
  method: string;
  url: string;
  requestDigest?: string;
}

const STORED = "stored";

/** Exchanges a process remembers as stored (a page's requisites are asked about on every page of a site). */
const KNOWN_STORED = 20_000;

/**
 * A claim: this process may store the exchange; or it is stored (in `storedIn`, when the claim says which
 * WACZ); or it is `pending`: a live process (this one too: another tab) is writing it right now, and it is
 * stored only once that write succeeds (if it fails, the claim is released and may be taken again).
 */
export type ClaimResult = { claimed: true } | { claimed: false; storedIn: string | null; pending?: true };

/** Field of a stored exchange in the claims hash: "<status> <method> <url>[ <request body digest>]". */
function exchangeField({ status, method, url, requestDigest }: ExchangeIdentity): string {
  return requestDigest ? `${status} ${method} ${url} ${requestDigest}` : `${status} ${method} ${url}`;
}

// A claim is "stored <WACZ filename>" (final: "stored" alone from older versions) or the id of the
// process writing it (provisional). The provisional claim of a process taken for dead is taken over
// (see ownerRule.ts). Returns 1 when claimed, else what the claim holds.
const CLAIM_LUA = ownerScript(`
-- KEYS: storedExchanges, fenced; ARGV: claim, owner, heartbeatPrefix
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current == ARGV[2] then return 'mine' end
if current and (current == '${STORED}' or string.sub(current, 1, ${STORED.length + 1}) == '${STORED} ') then return current end
if current and not take_over(ARGV[3] .. current, KEYS[2], current) then return 'busy' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`);

// Confirm only our own claim: one taken over from us (we were fenced) stays with its new owner.
const CONFIRM_LUA = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;

const UNCLAIM_LUA = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
`;

/**
 * Which exchanges this crawl has stored, shared by its processes: an exchange is stored once per crawl.
 * A claim stays provisional (held by the writing process) until its records are safely in a WARC; a
 * provisional claim of a process that died (its record may have been cut off with its WARC) is taken over.
 *
 * This process knows which of its own provisional claims a tab of it is writing now (`writing`): one it
 * holds in Redis that no tab is writing (its confirm and its unclaim both failed while Redis was away) is
 * resolved at the next claim of that exchange, as claimed again by the tab asking, instead of read as
 * "being written" until the wait for it runs out.
 */
export class ExchangeClaims {
  /** Fields of the exchanges whose claim this process holds and a tab of it is writing. */
  private readonly writing = new Set<string>();
  /** Fields known stored: a stored claim is final (only a provisional one is ever undone), so it is not asked again. */
  private readonly knownStored = new RecentlyUsed<string, true>(KNOWN_STORED);

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly membership: Membership,
  ) {}

  /**
   * Claimed the first time an exchange is seen in this crawl (this process may store it); afterwards
   * not, with the WACZ holding it once it is stored there.
   */
  async claim(exchange: ExchangeIdentity): Promise<ClaimResult> {
    const { keys, processId, heartbeatPrefix } = this.membership;
    const field = exchangeField(exchange);
    const result = (await this.redis.eval(CLAIM_LUA, 2, keys.storedExchanges, keys.fenced, field, processId, heartbeatPrefix)) as number | string;
    // No await between reading `writing` and adding to it: of two tabs asking at once, one writes.
    if (result === 1 || (result === "mine" && !this.writing.has(field))) {
      this.writing.add(field);
      return { claimed: true };
    }
    if (result === "mine" || result === "busy") return { claimed: false, storedIn: null, pending: true };
    this.knownStored.set(field, true);
    const storedIn = typeof result === "string" && result.startsWith(`${STORED} `) ? result.slice(STORED.length + 1) : null;
    return { claimed: false, storedIn };
  }

  /** The exchange's records are safely in the WARC that goes into WACZ `waczFilename`. */
  // Whether it succeeds or not, the write is over: a claim left behind is no tab's any more (see above).
  async confirm(exchange: ExchangeIdentity, waczFilename: string): Promise<void> {
    const field = exchangeField(exchange);
    try {
      const confirmed = await this.redis.eval(CONFIRM_LUA, 1, this.membership.keys.storedExchanges, field, this.membership.processId, `${STORED} ${waczFilename}`);
      if (confirmed === 1) this.knownStored.set(field, true);
    } finally {
      this.writing.delete(field);
    }
  }

  /** Undo a claim whose records could not be written, so a later fetch may store it. */
  async unclaim(exchange: ExchangeIdentity): Promise<void> {
    const field = exchangeField(exchange);
    try {
      await this.redis.eval(UNCLAIM_LUA, 1, this.membership.keys.storedExchanges, field, this.membership.processId);
    } finally {
      this.writing.delete(field);
    }
  }

  /** Whether the exchange's records are in a WARC already (a provisional claim does not count). */
  async isStored(exchange: ExchangeIdentity): Promise<boolean> {
    return (await this.storedStatus(exchange.method, exchange.url, [exchange.status], exchange.requestDigest)) !== null;
  }

  /**
   * A status of `statuses` whose answer to `method url` is in a WARC already, else null: one this process knows stored,
   * or the first stored of them, read in one round trip.
   */
  async storedStatus(method: string, url: string, statuses: readonly number[], requestDigest?: string): Promise<number | null> {
    const fields = statuses.map((status) => exchangeField({ status, method, url, requestDigest }));
    const known = fields.findIndex((field) => this.knownStored.get(field));
    if (known >= 0) return statuses[known]!;
    const values = await this.redis.hmget(this.membership.keys.storedExchanges, ...fields);
    const stored = values.findIndex((value) => value === STORED || (value?.startsWith(`${STORED} `) ?? false));
    if (stored < 0) return null;
    this.knownStored.set(fields[stored]!, true);
    return statuses[stored]!;
  }
}
