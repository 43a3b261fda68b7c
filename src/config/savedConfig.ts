import type { Command } from "commander";
import { configKeyOf } from "./browsertrix/flags.js";

/** Options about the command itself: never written into a state file. */
const NOT_SAVED = new Set(["config", "version", "help"]);

/**
 * What a --saveState file holds besides its `state:` section. browsertrix-crawler writes back the
 * --config file it read; here the flags given on the command line (or CRAWL_ARGS) are added, under
 * their config key, so `--config <state file>` alone resumes the same crawl (the seeds are in it), but
 * for URLs holding a password, which must be given again.
 */
export function configToSave(program: Command, config: Record<string, unknown>): Record<string, unknown> {
  const saved: Record<string, unknown> = { ...config };
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
    // A state file is shared and kept: a URL with a password (redis://:secret@host) is given again, not stored.
    if (holdsPassword(program.getOptionValue(name))) continue;
    for (const key of keysOf.get(name) ?? []) delete saved[key];
    saved[name] = program.getOptionValue(name) as unknown;
  }
  return saved;
}

function holdsPassword(value: unknown): boolean {
  const values: unknown[] = Array.isArray(value) ? value : [value];
  return values.some((v) => typeof v === "string" && /\/\/[^/@\s]*:[^/@\s]+@/.test(v));
}
