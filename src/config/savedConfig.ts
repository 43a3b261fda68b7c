import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { configKeyOf } from "./browsertrix/flags.js";
import { applyConfig, readConfigFile } from "./configFile.js";
import { holdsSecret, stringsOf } from "../log/secrets.js";
import { logger } from "../log/logger.js";

/** Options about the command itself: never written into a state file. */
const NOT_SAVED = new Set(["config", "version", "help"]);
/**
 * The seeds are the archive's content, not settings: kept whatever their query says (`?key=` may be a page's
 * own), as their URLs are in the state's queue and in every record anyway; browsertrix-crawler's per-seed
 * `auth` is dropped, and seeds holding a password (`https://user:pw@host/`) are withheld like any secret.
 */
const SEED_KEYS = new Set(["url", "seeds"]);
/** Request headers (--header, `headers:`) are cookies and tokens more often than not: never written. */
const ALWAYS_WITHHELD = new Set(["header", "headers"]);

/**
 * The key of a state file naming the values left out of it because they hold a secret, and the --config
 * file they came from (null: the command line, the environment, or a config read from stdin).
 */
export const WITHHELD_KEY = "secretsWithheld";

export interface WithheldSecrets {
  keys: string[];
  config: string | null;
}

/**
 * What a --saveState file holds besides its `state:` section. browsertrix-crawler writes back the
 * --config file it read; here the flags given on the command line (or CRAWL_ARGS) are added, under
 * their config key, so `--config <state file>` alone resumes the same crawl (the seeds are in it). A
 * state file is shared and kept, so a value holding a secret (a password in a URL, a token before `@`,
 * a `?token=`/`?sig=` parameter) is never written: it is named under `secretsWithheld`, and the resume
 * takes it again from the --config file it came from (if still there), else from the command line or the
 * environment given again.
 */
export function configToSave(program: Command, config: Record<string, unknown>, configFile: string | null = null, resumedFrom: unknown = null): Record<string, unknown> {
  const saved: Record<string, unknown> = {};
  // Resumed from a state file that withheld some: they stay withheld, and where to find them stays known.
  const previous = asWithheld(resumedFrom);
  const withheld: WithheldSecrets = { keys: [...(previous?.keys ?? [])], config: previous?.config ?? null };
  for (const [key, value] of Object.entries(config)) {
    const kept = key === "seeds" ? withoutSeedAuth(value) : value;
    if (withheldValue(key, kept)) {
      if (!withheld.keys.includes(key)) withheld.keys.push(key);
      if (configFile && configFile !== "stdin") withheld.config = resolve(configFile);
    } else {
      saved[key] = kept;
    }
  }
  const keysOf = new Map<string, string[]>();
  for (const option of program.options) {
    const name = option.attributeName();
    keysOf.set(name, [...(keysOf.get(name) ?? []), configKeyOf(option)]);
  }
  for (const option of program.options) {
    const name = option.attributeName();
    // One entry per value: the option's own key, not each of its browsertrix spellings.
    if (configKeyOf(option) !== name || NOT_SAVED.has(name)) continue;
    const source = program.getOptionValueSource(name);
    if (source !== "cli" && source !== "env") continue;
    for (const key of keysOf.get(name) ?? []) delete saved[key];
    const value = program.getOptionValue(name) as unknown;
    if (withheldValue(name, value)) {
      if (!withheld.keys.includes(name)) withheld.keys.push(name);
      continue;
    }
    withheld.keys = withheld.keys.filter((key) => !(keysOf.get(name) ?? []).includes(key));
    saved[name] = value;
  }
  if (withheld.keys.length) saved[WITHHELD_KEY] = withheld;
  return saved;
}

function withheldValue(key: string, value: unknown): boolean {
  if (ALWAYS_WITHHELD.has(key)) return true;
  return SEED_KEYS.has(key) ? stringsOf(value).some(holdsUrlPassword) : holdsSecret(value);
}

function holdsUrlPassword(text: string): boolean {
  try {
    return new URL(text).password !== "";
  } catch {
    return false;
  }
}

/** browsertrix-crawler's per-seed `auth` (user:password) is not used here: a state file never keeps it. */
function withoutSeedAuth(seeds: unknown): unknown {
  if (!Array.isArray(seeds)) return seeds;
  return seeds.map((seed: unknown) => {
    if (seed === null || typeof seed !== "object" || !("auth" in seed)) return seed;
    const { auth: _auth, ...rest } = seed as Record<string, unknown>;
    return rest;
  });
}

/**
 * Resuming from a state file: the values it withheld, read again from the --config file they came from,
 * for those the command line and the environment do not give now. Said when some are still missing.
 */
export function restoreWithheld(program: Command, resumedFrom: unknown): void {
  const withheld = asWithheld(resumedFrom);
  if (!withheld || withheld.keys.length === 0) return;
  const { keys, config } = withheld;
  const missing = keys.filter((key) => !givenNow(program, key));
  if (missing.length === 0) return;
  if (config && existsSync(config)) {
    const original = readConfigFile(config);
    const picked = Object.fromEntries(missing.filter((key) => key in original).map((key) => [key, original[key]]));
    applyConfig(program, picked, config);
    const still = missing.filter((key) => !(key in original));
    if (still.length) logger.warn("state", "the state file left out values holding secrets that its original --config no longer has: give them again", { keys: still, config });
    return;
  }
  logger.warn("state", "the state file left out values holding secrets: give them again on the command line or in the environment", { keys: missing, ...(config ? { config } : {}) });
}

/** A state file's `secretsWithheld` as written by configToSave; null for anything else. */
function asWithheld(value: unknown): WithheldSecrets | null {
  if (value === null || typeof value !== "object") return null;
  const { keys, config } = value as Record<string, unknown>;
  if (!Array.isArray(keys)) return null;
  return { keys: keys.filter((key): key is string => typeof key === "string"), config: typeof config === "string" ? config : null };
}

function givenNow(program: Command, key: string): boolean {
  const option = program.options.find((opt) => configKeyOf(opt) === key);
  if (!option) return false;
  const source = program.getOptionValueSource(option.attributeName());
  return source === "cli" || source === "env";
}
