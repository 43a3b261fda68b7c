import { readFileSync } from "node:fs";
import { load, YAMLException } from "js-yaml";
import { CommanderError, type Command, type Option } from "commander";
import { OptionsError, type RawSeedSpec } from "./crawlOptions.js";
import { addCompatNote, asksForSomething, configKeyOf, isNotImplemented, SERVICE_KEYS } from "./browsertrix/flags.js";

/** Options about the command itself, not the crawl: a config file cannot set them. */
const NOT_CONFIGURABLE = new Set(["config", "version", "help"]);

/** Options browsertrix-crawler takes as an object (yargs dotted keys): a mapping is given as `name=value` items. */
const MAPPING_KEYS = new Set(["warcInfo"]);

/** Options whose list items may be mappings (--blockRules' rules): a mapping is given as its JSON. */
const JSON_ITEM_KEYS = new Set(["blockRules"]);

/** Keys a seed object of `seeds:` may carry (browsertrix-crawler's per-seed scope; ours: its budget, `limit` and `sizeLimit`). */
const SEED_KEYS = new Set(["url", "scopeType", "include", "exclude", "depth", "extraHops", "allowHash", "sitemap", "auth", "limit", "sizeLimit"]);

/** Read a YAML crawl config ("stdin" reads standard input, as browsertrix-crawler does). */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path === "stdin" ? 0 : path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new OptionsError(`--config ${path}: ${code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a folder" : "cannot be read"}`);
  }
  let parsed: unknown;
  try {
    parsed = text.trim() === "" ? {} : load(text, { filename: path });
  } catch (err) {
    if (err instanceof YAMLException) {
      const where = err.mark ? ` line ${err.mark.line + 1}` : "";
      throw new OptionsError(`--config ${path}${where}: not valid YAML: ${err.reason}`);
    }
    throw err;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new OptionsError(`--config ${path}: must be a mapping of flag names to values (e.g. "workers: 2")`);
  }
  if (!fitsExpanded(parsed, MAX_EXPANDED_VALUES)) {
    throw new OptionsError(`--config ${path}: its aliases expand to more than ${MAX_EXPANDED_VALUES} values (nested aliases, a "billion laughs"): refused`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * YAML aliases share one parsed value, so a few lines of nested aliases (each list naming the one
 * before nine times) parse in a blink yet stand for 9^9 values: anything that walks them (validation,
 * an error message) would run out of memory. No real config comes near this many values.
 */
const MAX_EXPANDED_VALUES = 100_000;

/** Whether walking `value` as a tree (every alias expanded) visits at most `budget` values. */
function fitsExpanded(value: unknown, budget: number): boolean {
  let left = budget;
  const walk = (node: unknown): boolean => {
    if (--left < 0) return false;
    if (node === null || typeof node !== "object") return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) if (!walk(child)) return false;
    return true;
  };
  return walk(value);
}

/** A value as it appears in an error message: JSON, cut short. */
function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Give each config key to the program's option of the same name, unless the command line set it.
 * The allowed keys are the program's own options, so every flag is a config key as soon as it exists.
 */
export function applyConfig(program: Command, config: Record<string, unknown>, file: string): void {
  const options = new Map(program.options.map((opt) => [configKeyOf(opt), opt] as const));
  const { rest, byHost } = headersByHost(config, file);
  for (const [key, value] of Object.entries(rest)) {
    const option = options.get(key);
    if (!option && key in SERVICE_KEYS) {
      if (value !== null && value !== undefined) addCompatNote(program, `--config ${file}: ${key} ignored: ${SERVICE_KEYS[key]}`);
      continue;
    }
    if (!option || NOT_CONFIGURABLE.has(key)) {
      const hint = closestKey(key, [...options.keys()].filter((k) => !NOT_CONFIGURABLE.has(k)));
      throw new OptionsError(`--config ${file}: unknown key "${key}"${hint ? ` (did you mean "${hint}"?)` : ""}`);
    }
    // Commander's order: a flag on the command line or from its environment variable beats the file.
    const name = option.attributeName();
    const source = program.getOptionValueSource(name);
    if (source === "cli" || source === "env" || value === null || value === undefined) continue;
    const where = `--config ${file}: ${key}`;
    // A browsertrix-crawler key we do not implement yet: kept as it is, to be warned about.
    if (isNotImplemented(option)) {
      if (asksForSomething(name, value)) program.setOptionValueWithSource(name, value, "config");
      continue;
    }
    program.setOptionValueWithSource(name, name === "seeds" ? seedList(value, where, program) : optionValue(option, value, where), "config");
  }
  // `headers:` adds to --header (or `header:`), whichever gave those.
  if (byHost.length) program.setOptionValueWithSource("header", [...((program.getOptionValue("header") as string[] | undefined) ?? []), ...byHost], program.getOptionValueSource("header") ?? "config");
  seedSitemaps(program, file);
}

/**
 * `headers:` maps a host (`"*"`: every host) to its headers (`{Name: value}`, or a list of `"Name: value"`):
 * taken as --header items `host Name: value`.
 */
function headersByHost(config: Record<string, unknown>, file: string): { rest: Record<string, unknown>; byHost: string[] } {
  const { headers, ...rest } = config;
  if (headers === undefined || headers === null) return { rest, byHost: [] };
  const where = `--config ${file}: headers`;
  if (typeof headers !== "object" || Array.isArray(headers)) throw new OptionsError(`${where} maps hosts ("*" for every host) to headers, got ${preview(headers)}`);
  const items: string[] = [];
  for (const [host, fields] of Object.entries(headers)) {
    const lines = Array.isArray(fields) ? fields.map((field, i) => scalarText(field, `${where}.${host}[${i}]`))
      : fields !== null && typeof fields === "object" ? Object.entries(fields).map(([name, value]) => `${name}: ${scalarText(value, `${where}.${host}.${name}`)}`)
      : [scalarText(fields, `${where}.${host}`)];
    items.push(...lines.map((line) => `${host} ${line}`));
  }
  return { rest, byHost: items };
}

/**
 * browsertrix-crawler's per-seed `sitemap:`. Our sitemap reading is crawl-wide (--useSitemap): a seed that
 * asks for one turns it on for every seed, unless the sitemap flag itself was given; said when it widens.
 */
function seedSitemaps(program: Command, file: string): void {
  const seeds = program.getOptionValueSource("seeds") === "config" ? (program.getOptionValue("seeds") as (string | RawSeedSpec)[]) : [];
  const asking = seeds.filter((seed): seed is RawSeedSpec => typeof seed !== "string" && seed.sitemap !== undefined);
  if (asking.length === 0) return;
  const source = program.getOptionValueSource("useSitemap");
  if (source !== "cli" && source !== "env" && source !== "config") program.setOptionValueWithSource("useSitemap", asking[0].sitemap, "config");
  const urls = new Set(asking.map((seed) => String(seed.sitemap)));
  if (asking.length < seeds.length || urls.size > 1) {
    const sitemap = program.getOptionValue("useSitemap") as string | boolean;
    addCompatNote(program, `--config ${file}: a seed's own sitemap is read for every seed (sitemap reading is crawl-wide here: --useSitemap${typeof sitemap === "string" ? ` ${sitemap}` : ""})`);
  }
}

/** The value commander itself would have produced had the flag been given on the command line. */
function optionValue(option: Option, value: unknown, where: string): unknown {
  const takesValue = option.required || option.optional;
  if (!takesValue) {
    // The key is the value's name (`sandbox` for --no-sandbox), so the YAML value is stored as it is.
    if (typeof value !== "boolean") throw new OptionsError(`${where} must be true or false, got ${preview(value)}`);
    return value;
  }
  if (typeof value === "boolean") {
    // `--flag [value]` given bare means true; a flag that needs a value cannot be switched on alone.
    if (option.optional) return value ? true : undefined;
    throw new OptionsError(`${where} needs a value, got ${value}`);
  }
  if (MAPPING_KEYS.has(option.attributeName()) && value !== null && typeof value === "object" && !Array.isArray(value)) {
    value = Object.entries(value).map(([name, field]) => `${name}=${scalarText(field, `${where}.${name}`)}`);
  }
  const items = (Array.isArray(value) ? value : [value]).map((item: unknown) => (JSON_ITEM_KEYS.has(option.attributeName()) && item !== null && typeof item === "object" && !Array.isArray(item) ? JSON.stringify(item) : item));
  const texts = items.map((item, i) => scalarText(item, Array.isArray(value) ? `${where}[${i}]` : where));
  if (!option.parseArg) return option.variadic ? texts : texts.join(",");
  let parsed: unknown = undefined;
  try {
    // Repeatable flags collect each item, as if the flag had been given once per item.
    for (const text of texts) parsed = option.parseArg(text, parsed);
  } catch (err) {
    if (err instanceof CommanderError) throw new OptionsError(`${where}: ${JSON.stringify(texts.join(","))} is invalid: ${err.message}`);
    throw err;
  }
  return parsed;
}

function scalarText(value: unknown, where: string): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "boolean") return String(value);
  throw new OptionsError(`${where} must be a ${Array.isArray(value) ? "single value or a flat list" : "string, number or list"}, got ${preview(value)}`);
}

/** `seeds:` is a list of URLs, of seed objects with their own scope, or a comma-separated string. */
function seedList(value: unknown, where: string, program: Command): (string | RawSeedSpec)[] {
  const items = Array.isArray(value) ? value : [value];
  return items.map((item, i) => {
    const at = `${where}[${i}]`;
    if (typeof item === "string") return item;
    if (item === null || typeof item !== "object" || Array.isArray(item)) {
      throw new OptionsError(`${at} must be a URL or a mapping with a url, got ${preview(item)}`);
    }
    const fields = item as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      if (!SEED_KEYS.has(key)) throw new OptionsError(`${at}: unknown key "${key}" (a seed may have ${[...SEED_KEYS].join(", ")})`);
    }
    if (typeof fields.url !== "string") throw new OptionsError(`${at} has no url`);
    const spec: RawSeedSpec = { url: fields.url };
    if (fields.scopeType != null) spec.scopeType = scalarText(fields.scopeType, `${at}.scopeType`);
    if (fields.depth != null) spec.depth = scalarText(fields.depth, `${at}.depth`);
    if (fields.extraHops != null) spec.extraHops = scalarText(fields.extraHops, `${at}.extraHops`);
    // The seed's own budget (--seedPageLimit, --seedSizeLimit for the others): pages, and bytes (a size such as 100MB).
    if (fields.limit != null) spec.limit = scalarText(fields.limit, `${at}.limit`);
    if (fields.sizeLimit != null) spec.sizeLimit = scalarText(fields.sizeLimit, `${at}.sizeLimit`);
    for (const key of ["include", "exclude"] as const) {
      const rx = fields[key];
      if (rx != null) spec[key] = (Array.isArray(rx) ? rx : [rx]).map((r, j) => scalarText(r, `${at}.${key}[${j}]`));
    }
    if (fields.allowHash != null) {
      if (typeof fields.allowHash !== "boolean") throw new OptionsError(`${at}.allowHash must be true or false, got ${preview(fields.allowHash)}`);
      spec.allowHashUrls = fields.allowHash;
    }
    if (fields.sitemap != null && fields.sitemap !== false) {
      if (typeof fields.sitemap !== "boolean" && typeof fields.sitemap !== "string") throw new OptionsError(`${at}.sitemap must be true, false or a sitemap URL, got ${preview(fields.sitemap)}`);
      spec.sitemap = fields.sitemap;
    }
    if (fields.auth != null && fields.auth !== "") addCompatNote(program, `${at}.auth: per-seed auth is not supported yet (accepted for browsertrix-crawler compatibility): the seed is crawled without credentials`);
    return spec;
  });
}

/** The known key within two edits of a mistyped one, for a helpful error. */
function closestKey(key: string, known: string[]): string | null {
  let best: string | null = null;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}
