import type { StateRedis } from "../frontier/frontier.js";
import { ExtraSeeds } from "../frontier/extraSeeds.js";
import type { CrawlStateKeys } from "../state/stateKeys.js";

/** A seed's budget (a config seed's `limit`, `sizeLimit`; --seedPageLimit, --seedSizeLimit): 0 = none. */
export interface SeedBudget {
  /** Pages of the seed crawled at most. */
  pages: number;
  /** WARC bytes written for the seed's pages (and their resources) after which no page of it starts. */
  bytes: number;
}

/** Why a page may not be queued or started: its seed's page or size budget is spent, or its host's page cap. */
export type BudgetRefusal = "seedPageLimit" | "seedSizeLimit" | "hostPageLimit";

/** What a seed's budget counted: pages crawled, bytes written, and the budget that stopped it (null: none did). */
export interface SeedTally {
  pages: number;
  bytes: number;
  budgetEnd: "pageLimit" | "sizeLimit" | null;
}

const REFUSALS: (BudgetRefusal | null)[] = [null, "seedPageLimit", "seedSizeLimit", "hostPageLimit"];

// A page holds a slot of its seed's and its host's budgets from its start until it is crawled (then it
// counts as a page) or given back (failed, retried, put back): a budget is spent at pages crawled +
// slots held. Slots of processes taken for dead (fenced) are dropped as they are met.
const COUNT_SLOTS = `
local bySeed, byHost = {}, {}
local slots = redis.call('HGETALL', KEYS[4])
for i = 1, #slots, 2 do
  local slot = cjson.decode(slots[i + 1])
  if redis.call('SISMEMBER', KEYS[5], slot.owner) == 1 then
    redis.call('HDEL', KEYS[4], slots[i])
  elseif slots[i] ~= ARGV[1] then
    bySeed[slot.seed] = (bySeed[slot.seed] or 0) + 1
    byHost[slot.host] = (byHost[slot.host] or 0) + 1
  end
end
local function verdict(seed, host, pageLimit, sizeLimit, hostLimit)
  if sizeLimit > 0 and tonumber(redis.call('HGET', KEYS[2], seed) or '0') >= sizeLimit then return 2 end
  if pageLimit > 0 and tonumber(redis.call('HGET', KEYS[1], seed) or '0') + (bySeed[seed] or 0) >= pageLimit then return 1 end
  if hostLimit > 0 and tonumber(redis.call('HGET', KEYS[3], host) or '0') + (byHost[host] or 0) >= hostLimit then return 3 end
  return 0
end
`;

// Whether pages found may be queued: 0 yes, 1 seed page budget, 2 seed size budget, 3 host cap; one answer a page.
const CHECK_LUA = `
-- KEYS: seedPages, seedBytes, hostPages, budgetSlots, fenced
-- ARGV: '' (no page of its own), hostLimit, then seed, host, pageLimit, sizeLimit for each page
${COUNT_SLOTS}
local answers = {}
for i = 3, #ARGV, 4 do
  answers[#answers + 1] = verdict(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[2]))
end
return answers
`;

// Check and take a slot in one step: two processes cannot both start the last page of a budget.
const RESERVE_LUA = `
-- KEYS: seedPages, seedBytes, hostPages, budgetSlots, fenced, seedEnds
-- ARGV: url, owner, seed, host, pageLimit, sizeLimit, hostLimit
${COUNT_SLOTS}
local answer = verdict(ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
if answer == 1 then redis.call('HSETNX', KEYS[6], ARGV[3], 'pageLimit') end
if answer == 2 then redis.call('HSETNX', KEYS[6], ARGV[3], 'sizeLimit') end
if answer == 0 then redis.call('HSET', KEYS[4], ARGV[1], cjson.encode({seed = ARGV[3], host = ARGV[4], owner = ARGV[2]})) end
return answer
`;

// The attempt's records stay in the WARC: its bytes are the seed's all the same.
const RELEASE_LUA = `
-- KEYS: budgetSlots, seedBytes; ARGV: url, owner, seed, bytes
local json = redis.call('HGET', KEYS[1], ARGV[1])
if json and cjson.decode(json).owner == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end
if tonumber(ARGV[4]) > 0 then redis.call('HINCRBY', KEYS[2], ARGV[3], tonumber(ARGV[4])) end
return 0
`;

// The page is crawled: its slot becomes a page of its seed and host, its bytes the seed's.
const FINISH_LUA = `
-- KEYS: budgetSlots, seedPages, seedBytes, hostPages, seedEnds
-- ARGV: url, seed, host, bytes, pageLimit, sizeLimit
redis.call('HDEL', KEYS[1], ARGV[1])
local pages = redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
local bytes = redis.call('HINCRBY', KEYS[3], ARGV[2], tonumber(ARGV[4]))
redis.call('HINCRBY', KEYS[4], ARGV[3], 1)
if tonumber(ARGV[5]) > 0 and pages >= tonumber(ARGV[5]) then redis.call('HSETNX', KEYS[5], ARGV[2], 'pageLimit') end
if tonumber(ARGV[6]) > 0 and bytes >= tonumber(ARGV[6]) then redis.call('HSETNX', KEYS[5], ARGV[2], 'sizeLimit') end
return pages
`;

// Bytes of a page written after it was settled (a stream's files, a socket's records, past its drain deadline).
const ADD_BYTES_LUA = `
-- KEYS: seedBytes, seedEnds; ARGV: seed, bytes, sizeLimit
local bytes = redis.call('HINCRBY', KEYS[1], ARGV[1], tonumber(ARGV[2]))
if tonumber(ARGV[3]) > 0 and bytes >= tonumber(ARGV[3]) then redis.call('HSETNX', KEYS[2], ARGV[1], 'sizeLimit') end
return bytes
`;

/** A page as budgets see it: its URL and the seed id it carries. */
export interface BudgetedPage {
  url: string;
  seedId: number;
}

/**
 * Per-seed budgets (pages, bytes) and the per-host page cap, shared by every process of the crawl through
 * Redis: a hash field per seed and per host, plus one per page being crawled now. Pages found are checked
 * before they are queued (`refusals`), a page taken from the queue takes a slot before it starts
 * (`reserve`: check and take in one script), and gives it back if its attempt does not crawl it
 * (`release`) or turns it into a crawled page with its bytes (`finished`). A seed added at a seed's
 * redirect target (--addRedirectedSeeds) spends the budget of the seed it came from.
 */
export class SeedBudgets {
  private readonly extraSeeds: ExtraSeeds;
  /** Seed given (0..n-1) of each extra seed, by its index among the extra seeds. */
  private readonly extraRoots: number[] = [];

  constructor(
    private readonly redis: StateRedis,
    private readonly keys: CrawlStateKeys,
    private readonly owner: string,
    /** The budget of each seed given, by seed id. */
    private readonly budgets: SeedBudget[],
    /** --maxPagesPerHost; 0 = none. */
    private readonly hostLimit: number,
  ) {
    this.extraSeeds = new ExtraSeeds(redis, keys);
  }

  /** Whether any budget or cap is set: else pages are only counted (for the seeds report), never refused. */
  get limited(): boolean {
    return this.hostLimit > 0 || this.budgets.some((b) => b.pages > 0 || b.bytes > 0);
  }

  /** For each page found: null when it may be queued, else why not. One round trip for all of them. */
  async refusals(pages: BudgetedPage[]): Promise<(BudgetRefusal | null)[]> {
    if (!this.limited || pages.length === 0) return pages.map(() => null);
    const args: (string | number)[] = ["", this.hostLimit];
    for (const page of pages) {
      const seed = await this.rootOf(page.seedId);
      const budget = this.budgets[seed];
      args.push(seed, pageCapHostOf(page.url), budget?.pages ?? 0, budget?.bytes ?? 0);
    }
    const k = this.keys;
    const answers = (await this.redis.eval(CHECK_LUA, 5, k.seedPages, k.seedBytes, k.hostPages, k.budgetSlots, k.fenced, ...args)) as number[];
    return answers.map((a) => REFUSALS[a] ?? null);
  }

  /** Take a slot for a page about to start; null when it may start, else why not (nothing taken then). */
  async reserve(page: BudgetedPage): Promise<BudgetRefusal | null> {
    if (!this.limited) return null;
    const seed = await this.rootOf(page.seedId);
    const budget = this.budgets[seed];
    const k = this.keys;
    const answer = (await this.redis.eval(
      RESERVE_LUA, 6, k.seedPages, k.seedBytes, k.hostPages, k.budgetSlots, k.fenced, k.seedEnds,
      page.url, this.owner, seed, pageCapHostOf(page.url), budget?.pages ?? 0, budget?.bytes ?? 0, this.hostLimit,
    )) as number;
    return REFUSALS[answer] ?? null;
  }

  /**
   * The page's attempt did not crawl it (failed, retried, put back, skipped): its slot is free again; the
   * `bytes` it wrote all the same count in its seed's size.
   */
  async release(page: BudgetedPage, bytes: number): Promise<void> {
    if (!this.limited && bytes <= 0) return;
    const seed = await this.rootOf(page.seedId);
    await this.redis.eval(RELEASE_LUA, 2, this.keys.budgetSlots, this.keys.seedBytes, page.url, this.owner, seed, Math.max(0, Math.round(bytes)));
  }

  /** The page is crawled, `bytes` of WARC records written for it: one more page of its seed and host. */
  async finished(page: BudgetedPage, bytes: number): Promise<void> {
    const seed = await this.rootOf(page.seedId);
    const budget = this.budgets[seed];
    const k = this.keys;
    await this.redis.eval(
      FINISH_LUA, 5, k.budgetSlots, k.seedPages, k.seedBytes, k.hostPages, k.seedEnds,
      page.url, seed, pageCapHostOf(page.url), Math.max(0, Math.round(bytes)), budget?.pages ?? 0, budget?.bytes ?? 0,
    );
  }

  /**
   * Bytes written for a page after it was settled (crawled or given back): its seed's all the same, and they
   * may spend its size budget.
   */
  async addBytes(page: BudgetedPage, bytes: number): Promise<void> {
    if (bytes <= 0) return;
    const seed = await this.rootOf(page.seedId);
    await this.redis.eval(ADD_BYTES_LUA, 2, this.keys.seedBytes, this.keys.seedEnds, seed, Math.round(bytes), this.budgets[seed]?.bytes ?? 0);
  }

  /** What each seed given counted so far, by seed id (every process's pages). */
  async tallies(): Promise<SeedTally[]> {
    const k = this.keys;
    const [pages, bytes, ends] = await Promise.all([k.seedPages, k.seedBytes, k.seedEnds].map((key) => this.redis.hgetall(key)));
    return this.budgets.map((_, seed) => ({
      pages: Number(pages[seed] ?? 0),
      bytes: Number(bytes[seed] ?? 0),
      budgetEnd: ends[seed] === "pageLimit" || ends[seed] === "sizeLimit" ? ends[seed] : null,
    }));
  }

  /** The seed given whose budget a page of `seedId` spends (an extra seed's, its original's). */
  async rootOf(seedId: number): Promise<number> {
    const given = this.budgets.length;
    if (seedId < given) return seedId;
    if (seedId - given >= this.extraRoots.length) {
      for (const extra of await this.extraSeeds.list(this.extraRoots.length)) {
        // An extra seed's original comes before it: given, or an extra seed already resolved.
        this.extraRoots.push(extra.origSeedId < given ? extra.origSeedId : this.extraRoots[extra.origSeedId - given] ?? 0);
      }
    }
    return this.extraRoots[seedId - given] ?? 0;
  }
}

/** The host a page counts against for --maxPagesPerHost: host and port, as the URL names them. */
function pageCapHostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "";
  }
}
