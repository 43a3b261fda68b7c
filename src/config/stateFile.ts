import { dump } from "js-yaml";
import type { SavedCrawlState } from "../frontier/savedState.js";
import { OptionsError } from "./optionsError.js";

/**
 * The first key of a state file written here (its format's version); the file's last key is STATE_FILE_END.
 * browsertrix-crawler's own state files have neither, and older ones of ours neither: those load as they are.
 */
export const STATE_FILE_FORMAT = "crawlStateFile";
/** Written after everything else: a file of ours without it was cut short (a copy, an in-place write). */
export const STATE_FILE_END = "crawlStateFileEnd";
const FORMAT_VERSION = 1;

/** Entries per chunk written: a state of millions of entries is written piece by piece, never as one string. */
const ENTRIES_PER_CHUNK = 2000;

/**
 * A state file as chunks of YAML, the same YAML browsertrix-crawler writes and reads (`state:` with its
 * lists of strings): the format key, the config (js-yaml), the state section, the big lists entry by entry,
 * and last the end key.
 */
export function* stateFileChunks(config: Record<string, unknown>, state: SavedCrawlState): Generator<string> {
  yield `${STATE_FILE_FORMAT}: ${FORMAT_VERSION}\n`;
  const { [STATE_FILE_FORMAT]: _format, [STATE_FILE_END]: _end, state: _state, ...rest } = config;
  if (Object.keys(rest).length) yield dump(rest, { lineWidth: -1 });
  yield "state:\n";
  for (const [key, value] of Object.entries(state) as [string, unknown][]) {
    if (value === undefined) continue;
    if (!Array.isArray(value) || value.length === 0 || !value.every((v): v is string => typeof v === "string")) {
      yield indented(dump({ [key]: value }, { lineWidth: -1 }));
      continue;
    }
    yield `  ${key}:\n`;
    for (let at = 0; at < value.length; at += ENTRIES_PER_CHUNK) {
      let chunk = "";
      for (const item of value.slice(at, at + ENTRIES_PER_CHUNK)) chunk += `    - ${yamlString(item)}\n`;
      yield chunk;
    }
  }
  yield `${STATE_FILE_END}: true\n`;
}

function indented(yaml: string): string {
  return yaml.replace(/^(?=.)/gm, "  ");
}

/**
 * A string as a YAML double-quoted scalar: JSON's escapes are YAML's, and the characters YAML does not allow
 * raw in a stream (C1 controls, U+FEFF, U+FFFE/F) or may take for line breaks (U+2028/9) are escaped too.
 */
function yamlString(value: string): string {
  return JSON.stringify(value).replace(/[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A --config file's mapping without the state file's own keys. A state file of ours (it starts with
 * STATE_FILE_FORMAT) that lacks STATE_FILE_END was cut short and is refused: resuming it would lose what was cut.
 */
export function checkedStateFile(parsed: Record<string, unknown>, path: string): Record<string, unknown> {
  const { [STATE_FILE_FORMAT]: format, [STATE_FILE_END]: end, ...config } = parsed;
  if (format !== undefined && end !== true) {
    throw new OptionsError(`--config ${path}: this state file was cut short (it lacks its last line "${STATE_FILE_END}: true"): refused; resume from a whole one`);
  }
  return config;
}

/** A URL with its password left out (its user name kept, to put the password back): null when it has none. */
function withoutPassword(url: string): string | null {
  if (!url.includes("@")) return null;
  try {
    const parsed = new URL(url);
    if (!parsed.password) return null;
    parsed.password = "";
    return parsed.href;
  } catch {
    return null;
  }
}

/** Apply `change` to every URL of a state (lists of URLs, queue entries' `url`, extra seeds' `newUrl`). */
function mapStateUrls(state: SavedCrawlState, change: (url: string) => string | null): SavedCrawlState {
  const plain = (urls: string[]) => urls.map((url) => change(url) ?? url);
  const entries = (field: "url" | "newUrl") => (jsons: string[]) =>
    jsons.map((json) => {
      if (!json.includes("@")) return json;
      const entry = JSON.parse(json) as Record<string, unknown>;
      const url = entry[field];
      const changed = typeof url === "string" ? change(url) : null;
      return changed === null ? json : JSON.stringify({ ...entry, [field]: changed });
    });
  const jsonUrls = entries("url");
  return {
    ...state,
    finished: plain(state.finished),
    excluded: plain(state.excluded),
    queued: jsonUrls(state.queued),
    pending: jsonUrls(state.pending),
    failed: jsonUrls(state.failed),
    extraSeeds: entries("newUrl")(state.extraSeeds),
    ...(Array.isArray(state.done) ? { done: jsonUrls(state.done) } : {}),
  };
}

/**
 * A state as a state file keeps it: no URL's password (a seed's `https://user:pw@host/`, and the pages found
 * under it). `withheld`: how many URLs lost theirs.
 */
export function withoutUrlPasswords(state: SavedCrawlState): { state: SavedCrawlState; withheld: number } {
  let withheld = 0;
  const saved = mapStateUrls(state, (url) => {
    const bare = withoutPassword(url);
    if (bare !== null) withheld++;
    return bare;
  });
  return { state: saved, withheld };
}

/**
 * A state read from a file with the passwords it left out put back: a URL with a user name and no password
 * takes the password of the seed (as given now) of the same origin and user.
 */
export function withUrlPasswords(state: SavedCrawlState, seeds: string[]): SavedCrawlState {
  const passwords = new Map<string, string>();
  for (const seed of seeds) {
    try {
      const url = new URL(seed);
      if (url.password) passwords.set(`${url.username}@${url.origin}`, url.password);
    } catch {
      // not a URL: nothing to put back from it
    }
  }
  if (!passwords.size) return state;
  return mapStateUrls(state, (url) => {
    if (!url.includes("@")) return null;
    try {
      const parsed = new URL(url);
      const password = parsed.username && !parsed.password ? passwords.get(`${parsed.username}@${parsed.origin}`) : undefined;
      if (password === undefined) return null;
      parsed.password = password;
      return parsed.href;
    } catch {
      return null;
    }
  });
}
