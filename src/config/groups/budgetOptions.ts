import { OptionsError } from "../optionsError.js";
import { integer, parseSize } from "../flagValues.js";
import type { SeedBudget } from "../../budgets/seedBudgets.js";

/**
 * Per-seed budgets and the per-host page cap (the practice of national libraries' domain crawls: so many
 * pages or bytes a seed, then the seeds that hit their budget go on to the next stage, reports/seeds.jsonl).
 */
export interface BudgetOptions {
  /** Each seed's budget, by seed id: a config seed's own `limit` / `sizeLimit`, else --seedPageLimit / --seedSizeLimit. */
  seeds: SeedBudget[];
  /** --maxPagesPerHost: pages crawled at most on one host (host:port), whatever their seed; 0 = no cap. */
  maxPagesPerHost: number;
}

export interface RawBudgetFlags {
  seedPageLimit?: string;
  seedSizeLimit?: string;
  maxPagesPerHost?: string;
}

/** A seed as given: a URL, or a config seed object with its own budget. */
export type BudgetedSeed = string | { url: string; limit?: string; sizeLimit?: string };

export function budgetOptions(flags: RawBudgetFlags, seeds: BudgetedSeed[]): BudgetOptions {
  const pages = integer("seedPageLimit", flags.seedPageLimit, 0, 0);
  const bytes = parseSize("seedSizeLimit", flags.seedSizeLimit, 0);
  return {
    seeds: seeds.map((seed) => {
      if (typeof seed === "string") return { pages, bytes };
      try {
        return { pages: integer("limit", seed.limit, pages, 0), bytes: parseSize("sizeLimit", seed.sizeLimit, bytes) };
      } catch (err) {
        if (err instanceof OptionsError) throw new OptionsError(`seed ${seed.url}: ${err.message.replace(/^--/, "")}`);
        throw err;
      }
    }),
    maxPagesPerHost: integer("maxPagesPerHost", flags.maxPagesPerHost, 0, 0),
  };
}
