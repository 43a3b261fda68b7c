// The crawl's templates in Redis: who browses a template's learning pages, what they showed, which pages are
// verified, and which templates went back to the browser. Shared by every process of a crawl and by a resumed crawl.

import type { Cluster, Redis } from "ioredis";
import { logger } from "../log/logger.js";
import { RecentlyUsed } from "../util/recentlyUsed.js";
import type { CrawlStateKeys } from "../state/stateKeys.js";
import { guardChoice } from "./captureGuard.js";
import { learnTemplate, madeFromPage, withAdopted } from "./templateLearning.js";
import type { BrowsedObservation, CaptureChoice, DocumentSelectors, LearnedTemplate, VerifyTurn } from "./templateTypes.js";

export interface TemplateBookOptions {
  /** Browsed pages a template is learned from (at least 1). */
  learnPages: number;
  /**
   * The first page the guard lets through is browsed and compared instead, then one in verifyEvery since the
   * template's last verify page of any kind; 0: neither (a template's state may still call for verify pages).
   */
  verifyEvery: number;
  /** how long a learning slot another process took is waited for before browsing anyway */
  learnWaitMs?: number;
}

const DEFAULT_LEARN_WAIT_MS = 60_000;
const WAIT_RETRY_MS = 1000;
const MISSING_LOGGED_AT_MOST = 20;
/** Learned templates a process keeps (a site of many templates must not fill memory); one evicted is read again. */
const CACHED_TEMPLATES = 1000;
/** Explained selectors a process remembers (`<template>:explained:<selector>` fields); one evicted is read again. */
const KNOWN_EXPLAINED = 10_000;

// Before a template is learned: take one of its learnPages learning slots, or wait for the pages that hold them,
// or (the newest slot is older than the wait: its holder may have died) browse another learning page anyway,
// which restarts the wait for the others. Redis's clock, so every process judges a slot's age alike.
const CHOOSE_LUA = `
-- KEYS: templateState; ARGV: template, learnPages, learnWaitMs
if redis.replicate_commands then redis.replicate_commands() end
local t = ARGV[1]
local fellBack = redis.call('HGET', KEYS[1], t .. ':fellBack')
if fellBack then return {'fallen-back', fellBack} end
local learnPages = tonumber(ARGV[2])
local observed = tonumber(redis.call('HGET', KEYS[1], t .. ':observed') or '0')
if observed >= learnPages then return {'learned', tostring(observed), redis.call('HGET', KEYS[1], t .. ':adoptions') or '0'} end
local time = redis.call('TIME')
local now = string.format('%.0f', tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
local slots = tonumber(redis.call('HGET', KEYS[1], t .. ':slots') or '0')
if slots < learnPages then
  redis.call('HSET', KEYS[1], t .. ':slots', slots + 1, t .. ':slotAt', now)
  return {'learn', tostring(slots + 1)}
end
local age = tonumber(now) - tonumber(redis.call('HGET', KEYS[1], t .. ':slotAt') or '0')
if age < tonumber(ARGV[3]) then return {'wait', tostring(observed)} end
redis.call('HSET', KEYS[1], t .. ':slotAt', now)
return {'stale', string.format('%.0f', age)}
`;

// A template is learned from its first learnPages observations; later ones (a slot taken over from a holder that
// was only slow) are not kept, so every process learns the same template from the same pages.
const LEARN_LUA = `
-- KEYS: templateState, templateObservations; ARGV: template, learnPages, observation JSON
local t = ARGV[1]
local observed = tonumber(redis.call('HGET', KEYS[1], t .. ':observed') or '0')
if observed >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], t .. ':' .. (observed + 1), ARGV[3])
redis.call('HSET', KEYS[1], t .. ':observed', observed + 1)
return observed + 1
`;

// A learned template's first verify page: handed to one page, which every other page of the template waits for (the
// template is not trusted before it is verified once); handed again when it is older than learnWaitMs and not done
// (its page may have failed, or its process died). Redis's clock, as for the learning slots.
const FIRST_VERIFY_LUA = `
-- KEYS: templateState; ARGV: template, learnWaitMs
if redis.replicate_commands then redis.replicate_commands() end
local field = ARGV[1] .. ':firstVerify'
local state = redis.call('HGET', KEYS[1], field)
if state == 'done' then return 'done' end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if state and now - tonumber(state) < tonumber(ARGV[2]) then return 'wait' end
redis.call('HSET', KEYS[1], field, string.format('%.0f', now))
if state then return 'stale' end
return 'verify'
`;

// Selectors a page holds that the template's scripts looked for in vain on its learning pages, none explained yet:
// the page takes those no other page is verifying (and verifies them), else waits for the page that is. A claim older
// than learnWaitMs is taken over. Returns the selectors taken; none taken while some are claimed: wait.
const EXPLAIN_LUA = `
-- KEYS: templateState; ARGV: template, learnWaitMs, selector...
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local taken, claimed = {}, 0
for i = 3, #ARGV do
  local field = ARGV[1] .. ':explaining:' .. ARGV[i]
  local at = redis.call('HGET', KEYS[1], field)
  if at and now - tonumber(at) < tonumber(ARGV[2]) then
    claimed = claimed + 1
  else
    redis.call('HSET', KEYS[1], field, string.format('%.0f', now))
    taken[#taken + 1] = ARGV[i]
  end
end
if #taken == 0 and claimed > 0 then return {'wait'} end
return taken
`;

// The sample: a page the guard lets through is verified when verifyEvery pages have gone by since the template's last
// verify page. Every verify page counts, whatever chose it (the first, a selector to explain, a previous adoption): each
// compares a whole page of the template. The gap, not a rate: a template verified early and often for its own reasons
// is still checked every verifyEvery pages further on (one section of a site may differ from those seen so far).
const SAMPLE_LUA = `
-- KEYS: templateState; ARGV: template, verifyEvery, chosen ('1': a verify page already)
-- returns the number of pages since the last verify page when this one is sampled, else 0
local field = ARGV[1] .. ':sinceVerify'
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], field, 0)
  return 0
end
local n = redis.call('HINCRBY', KEYS[1], field, 1)
if n < tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], field, 0)
return n
`;

// A first verify page that could not be loaded: handed to the next page at once (unless one was done meanwhile).
const FIRST_VERIFY_FAILED_LUA = `
-- KEYS: templateState; ARGV: template
local field = ARGV[1] .. ':firstVerify'
if redis.call('HGET', KEYS[1], field) ~= 'done' then redis.call('HDEL', KEYS[1], field) end
return 0
`;

// A verify page's misses that no page URL makes (the same URLs on any page: an icon a script adds to some pages) are
// adopted as the template's fixed fetches and links, and the next page the guard lets through is verified too; past
// MAX_ADOPTIONS, or once fallen back, the template goes to the browser.
const ADOPT_LUA = `
-- KEYS: templateState, templateObservations; ARGV: template, maxAdoptions, adopted JSON, reason if over, explained
-- explained '1': the verify page held elements the learning pages lacked, which its misses are put down to: not
-- counted against maxAdoptions, and no next page verified for them.
local t = ARGV[1]
if redis.call('HGET', KEYS[1], t .. ':fellBack') then return 'fallen-back' end
local explained = ARGV[5] == '1'
if not explained then
  local unexplained = redis.call('HINCRBY', KEYS[1], t .. ':unexplainedAdoptions', 1)
  if unexplained > tonumber(ARGV[2]) then
    redis.call('HINCRBY', KEYS[1], t .. ':unexplainedAdoptions', -1)
    redis.call('HSETNX', KEYS[1], t .. ':fellBack', ARGV[4])
    return 'fell-back'
  end
end
local n = redis.call('HINCRBY', KEYS[1], t .. ':adoptions', 1)
redis.call('HSET', KEYS[2], t .. ':adopted:' .. n, ARGV[3])
if not explained then redis.call('HSET', KEYS[1], t .. ':verifyNext', '1') end
return 'adopted'
`;

/** Verify pages whose misses a template adopts before it goes back to the browser. */
const MAX_ADOPTIONS = 3;

/** How a verify page's comparison ended for its template. */
export type VerifyOutcome = "matched" | "adopted" | "fell-back";

/**
 * Hybrid capture's book of templates: for each page, whether it is browsed (to learn its template, to verify the
 * static capture, because the guard says so, or because the template fell back) or captured statically, and with
 * what. The state is in Redis (state/stateKeys.ts: templateState, templateObservations); a learned template is
 * kept per process and read again when the count of its observations in Redis changes.
 */
export class TemplateBook {
  private readonly learnPages: number;
  private readonly verifyEvery: number;
  private readonly learnWaitMs: number;
  /** Learned templates by key, at most CACHED_TEMPLATES. */
  private readonly cache = new RecentlyUsed<string, { observed: number; adoptions: number; learned: LearnedTemplate }>(CACHED_TEMPLATES);
  /**
   * What this process saw final in Redis, not asked again: a template whose first verify page is done, a selector
   * explained (neither is ever undone; a template's every static page would ask).
   */
  private readonly firstVerifyDone = new RecentlyUsed<string, true>(CACHED_TEMPLATES);
  private readonly knownExplained = new RecentlyUsed<string, true>(KNOWN_EXPLAINED);

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: CrawlStateKeys,
    options: TemplateBookOptions,
  ) {
    if (!Number.isInteger(options.learnPages) || options.learnPages < 1) throw new Error(`learnPages must be a whole number of at least 1, got ${options.learnPages}`);
    if (!Number.isInteger(options.verifyEvery) || options.verifyEvery < 0) throw new Error(`verifyEvery must be a whole number of at least 0, got ${options.verifyEvery}`);
    this.learnPages = options.learnPages;
    this.verifyEvery = options.verifyEvery;
    this.learnWaitMs = options.learnWaitMs ?? DEFAULT_LEARN_WAIT_MS;
  }

  /**
   * How to capture a page of a template: fallen back -> browser; not learned yet -> browser on a learning slot, or
   * wait for the pages holding the slots (browser once the newest slot is older than learnWaitMs); learned -> the
   * guard's browser, or the first page the guard lets go static a verify page (the others wait for its outcome), or
   * one the template's state calls for (a selector to explain, the page after an adoption), or a sampled one (SAMPLE_LUA),
   * or static.
   */
  async choose(pageUrl: string, template: string, documentScripts: string[], heldBy?: DocumentSelectors): Promise<CaptureChoice> {
    const [state, detail, adoptions] = (await this.redis.eval(CHOOSE_LUA, 1, this.keys.templateState, template, this.learnPages, this.learnWaitMs)) as [string, string, string?];
    switch (state) {
      case "fallen-back":
        return { mode: "browser", template, purpose: "fallen-back", reason: detail };
      case "learn":
        return { mode: "browser", template, purpose: "learn", reason: `learning page ${detail} of ${this.learnPages}` };
      case "stale":
        return { mode: "browser", template, purpose: "learn", reason: `no learning page was taken for ${detail} ms and the template is not learned yet: browsing another` };
      case "wait":
        return { mode: "wait", template, retryInMs: WAIT_RETRY_MS, reason: `the template's learning pages are being browsed (${detail} of ${this.learnPages} learned)` };
    }
    const learned = await this.read(template, Number(detail), Number(adoptions ?? "0"));
    const guard = guardChoice(learned, pageUrl, documentScripts);
    if (!guard.static) return { mode: "browser", template, purpose: "guard", reason: guard.reason };
    const unexplained = heldBy ? await this.unexplainedSelectors(template, learned, heldBy) : [];
    let chosen: { reason: string; turn: VerifyTurn } | null = null;
    if (unexplained.length > 0) {
      const taken = (await this.redis.eval(EXPLAIN_LUA, 1, this.keys.templateState, template, this.learnWaitMs, ...unexplained)) as string[];
      if (taken[0] === "wait" && taken.length === 1) return { mode: "wait", template, retryInMs: WAIT_RETRY_MS, reason: `another page is verifying what the template's scripts do with ${unexplained.slice(0, 3).join(", ")}` };
      const listed = taken.slice(0, 3).join(", ") + (taken.length > 3 ? ` (and ${taken.length - 3} more)` : "");
      // A whole page compared: the template's first verify page too when none is under way, which spares browsing another.
      const first = this.verifyEvery > 0 && ["verify", "stale"].includes(await this.firstVerify(template));
      chosen = { reason: `the document holds what the template's scripts look for and no browsed page held: ${listed}`, turn: { selectors: taken, first } };
    } else if ((await this.redis.hdel(this.keys.templateState, `${template}:verifyNext`)) === 1) {
      chosen = { reason: "the last verify page showed URLs the template now fetches: this page checks them", turn: { selectors: [], first: false } };
    } else if (this.verifyEvery > 0) {
      // The first one too, before any other: the learning pages are a template's first pages, and a site's first items
      // are often unlike the rest (no reviews yet, no "previous" link). The other pages wait for its outcome.
      const first = await this.firstVerify(template);
      if (first === "wait") return { mode: "wait", template, retryInMs: WAIT_RETRY_MS, reason: "the template's first verify page is being browsed" };
      if (first !== "done") {
        const reason = first === "verify" ? "the template's first page the guard lets through: verified before any is captured without the browser" : `the template's first verify page was not done within ${this.learnWaitMs} ms: verifying another`;
        chosen = { reason, turn: { selectors: [], first: true } };
      }
    }
    const since = this.verifyEvery > 0 ? Number(await this.redis.eval(SAMPLE_LUA, 1, this.keys.templateState, template, this.verifyEvery, chosen ? "1" : "0")) : 0;
    if (chosen) return { mode: "browser", template, purpose: "verify", ...chosen };
    if (since > 0) {
      return { mode: "browser", template, purpose: "verify", reason: `page ${since} the guard let through since the template's last verify page: one in ${this.verifyEvery} is verified`, turn: { selectors: [], first: false } };
    }
    return { mode: "static", template, fetches: guard.fetches, links: guard.links };
  }

  /** The template's first verify page: taken now (verify, or stale: its holder went quiet), being browsed (wait), or done. */
  private async firstVerify(template: string): Promise<"verify" | "stale" | "wait" | "done"> {
    if (this.firstVerifyDone.get(template)) return "done";
    const state = (await this.redis.eval(FIRST_VERIFY_LUA, 1, this.keys.templateState, template, this.learnWaitMs)) as "verify" | "stale" | "wait" | "done";
    if (state === "done") this.firstVerifyDone.set(template, true);
    return state;
  }

  /** What a browsed page showed: kept while the template has fewer than learnPages observations, dropped after. */
  async learn(template: string, observation: BrowsedObservation): Promise<void> {
    await this.redis.eval(LEARN_LUA, 2, this.keys.templateState, this.keys.templateObservations, template, this.learnPages, JSON.stringify(observation));
  }

  /**
   * A verify page's comparison: what the browser fetched and linked that the static pass lacked (volatile URLs left
   * out by the caller). Nothing: matched. Only URLs no page URL makes (the same on any page): adopted as the template's
   * fixed fetches and links, and the next page the guard lets through is verified too, up to MAX_ADOPTIONS verify
   * pages. Otherwise the template falls back to the browser for the rest of the crawl (kept in Redis, the first reason
   * wins), logged once with the template, the page and at most 20 missing URLs.
   */
  async verified(template: string, pageUrl: string, missing: { fetches: string[]; links: string[] }, selectors: readonly string[] = []): Promise<VerifyOutcome> {
    try {
      const outcome = await this.judgeVerify(template, pageUrl, missing, selectors.length > 0);
      // What the scripts do with these elements is now seen (and what they fetch adopted): no later page needs browsing for them.
      if (outcome !== "fell-back" && selectors.length) {
        await this.redis.hset(this.keys.templateState, Object.fromEntries(selectors.map((selector) => [`${template}:explained:${selector}`, pageUrl])));
        for (const selector of selectors) this.knownExplained.set(`${template}:explained:${selector}`, true);
      }
      return outcome;
    } finally {
      // Its outcome is recorded: the pages waiting for the template's first verify page go on.
      await this.redis.hset(this.keys.templateState, `${template}:firstVerify`, "done");
      this.firstVerifyDone.set(template, true);
    }
  }

  private async judgeVerify(template: string, pageUrl: string, missing: { fetches: string[]; links: string[] }, explained: boolean): Promise<VerifyOutcome> {
    const all = [...missing.fetches, ...missing.links];
    if (all.length === 0) return "matched";
    const learningPages = await this.learningPages(template);
    const fromPage = all.filter((url) => madeFromPage(url, pageUrl, learningPages));
    const lacked = `the static capture of the verify page ${pageUrl} lacked ${all.length} URL${all.length === 1 ? "" : "s"} the browser fetched or linked`;
    if (fromPage.length === 0) {
      const overReason = `${lacked}, after ${MAX_ADOPTIONS} verify pages that showed URLs the template lacked`;
      const outcome = (await this.redis.eval(ADOPT_LUA, 2, this.keys.templateState, this.keys.templateObservations, template, MAX_ADOPTIONS, JSON.stringify(missing), overReason, explained ? "1" : "0")) as VerifyOutcome | "fallen-back";
      if (outcome === "adopted") {
        logger.info("capture", `template ${template} adopts what its verify page fetched beyond the static pass, the same URLs on any page${explained ? ", for elements its learning pages lacked" : "; the next page is verified too"}`, { template, page: pageUrl, fetches: missing.fetches.slice(0, MISSING_LOGGED_AT_MOST), links: missing.links.slice(0, MISSING_LOGGED_AT_MOST) });
        return "adopted";
      }
      if (outcome === "fell-back") this.logFallBack(template, pageUrl, overReason, all);
      return "fell-back";
    }
    const reason = `${lacked}, made from its own URL (${fromPage.slice(0, 3).join(", ")})`;
    if ((await this.redis.hsetnx(this.keys.templateState, `${template}:fellBack`, reason)) === 1) this.logFallBack(template, pageUrl, reason, all);
    return "fell-back";
  }

  /**
   * Of the selectors the template's scripts looked for in vain on its learning pages, those this page's document holds
   * and no verify page has explained yet (shown to fetch nothing the template lacks).
   */
  private async unexplainedSelectors(template: string, learned: LearnedTemplate, heldBy: DocumentSelectors): Promise<string[]> {
    if (!learned.absentSelectors.length) return [];
    const fields = heldBy(learned.absentSelectors).map((selector) => ({ selector, field: `${template}:explained:${selector}` })).filter(({ field }) => !this.knownExplained.get(field));
    if (!fields.length) return [];
    const explained = await this.redis.hmget(this.keys.templateState, ...fields.map(({ field }) => field));
    fields.forEach(({ field }, i) => explained[i] !== null && this.knownExplained.set(field, true));
    return fields.filter((_, i) => explained[i] === null).map(({ selector }) => selector);
  }

  /**
   * A verify page could not be loaded: what it held for the template is handed on at once (the next page of the
   * template is the first verify page if it was; its selectors are free to claim).
   */
  async verifyFailed(template: string, turn: VerifyTurn): Promise<void> {
    if (turn.first) await this.redis.eval(FIRST_VERIFY_FAILED_LUA, 1, this.keys.templateState, template);
    if (turn.selectors.length) await this.redis.hdel(this.keys.templateState, ...turn.selectors.map((selector) => `${template}:explaining:${selector}`));
  }

  /** The URLs of the pages the template was learned from. */
  private async learningPages(template: string): Promise<string[]> {
    const observed = Number((await this.redis.hget(this.keys.templateState, `${template}:observed`)) ?? "0");
    if (observed === 0) return [];
    const texts = await this.redis.hmget(this.keys.templateObservations, ...Array.from({ length: observed }, (_, i) => `${template}:${i + 1}`));
    return texts.filter((text): text is string => text !== null).map((text) => (JSON.parse(text) as BrowsedObservation).pageUrl);
  }

  private logFallBack(template: string, pageUrl: string, reason: string, missing: string[]): void {
    logger.warn("capture", `template ${template} falls back to the browser for the rest of the crawl: ${reason}`, {
      template,
      page: pageUrl,
      missing: missing.slice(0, MISSING_LOGGED_AT_MOST),
      missingCount: missing.length,
    });
  }

  /** The learned template as this process last read it (null until learned): for the verify comparison. */
  async learned(template: string): Promise<LearnedTemplate | null> {
    const [observed, adoptions] = (await this.redis.hmget(this.keys.templateState, `${template}:observed`, `${template}:adoptions`)).map((v) => Number(v ?? "0"));
    if (observed! < this.learnPages) return this.cache.get(template)?.learned ?? null;
    return this.read(template, observed!, adoptions!);
  }

  /** The template learned from its observations, read from Redis when their count differs from the one cached. */
  private async read(template: string, observed: number, adoptions: number): Promise<LearnedTemplate> {
    const cached = this.cache.get(template);
    if (cached?.observed === observed && cached.adoptions === adoptions) return cached.learned;
    const fields = [...Array.from({ length: observed }, (_, i) => `${template}:${i + 1}`), ...Array.from({ length: adoptions }, (_, i) => `${template}:adopted:${i + 1}`)];
    const texts = await this.redis.hmget(this.keys.templateObservations, ...fields);
    const observations = texts.slice(0, observed).filter((text): text is string => text !== null).map((text) => JSON.parse(text) as BrowsedObservation);
    const adopted = texts.slice(observed).filter((text): text is string => text !== null).map((text) => JSON.parse(text) as { fetches: string[]; links: string[] });
    const learned = withAdopted(learnTemplate(observations), adopted);
    this.cache.set(template, { observed, adoptions, learned });
    return learned;
  }
}
