import type { BudgetCounts, SavedCrawlState } from "../../frontier/savedState.js";
import { OptionsError } from "../optionsError.js";

export type { SavedCrawlState };

/**
 * Portable crawl state (browsertrix-crawler's --saveState YAML files), what the crawl pushes into its
 * Redis for the Browsertrix service (--writePagesToRedis, --logErrorsToRedis, --logBehaviorsToRedis),
 * and which log contexts are written (--context, --logExcludeContext). browsertrix-crawler's names.
 */
export interface StateOptions {
  /** --saveState: never; partial (a state file when the crawl ends unfinished); always (also every interval). */
  saveState: SaveStateMode;
  /** --saveStateInterval: seconds between state files with `always`. */
  saveStateIntervalSeconds: number;
  /** --saveStateHistory: state files kept; older ones are deleted. */
  saveStateHistory: number;
  /** The `state:` section of the --config file: the crawl resumes from it; null = none. */
  resumeFrom: SavedCrawlState | null;
  /** What a state file holds besides `state:`: the --config file's keys, and the flags given on the command line. */
  configToSave: Record<string, unknown>;
  writePagesToRedis: boolean;
  logErrorsToRedis: boolean;
  logBehaviorsToRedis: boolean;
  /** --context: only these log contexts are written; empty = all. */
  logContexts: string[];
  /** --logExcludeContext: these log contexts are not written. */
  logExcludeContexts: string[];
}

export type SaveStateMode = "never" | "partial" | "always";

export interface RawStateFlags {
  saveState?: string;
  saveStateInterval?: string;
  saveStateHistory?: string;
  writePagesToRedis?: boolean;
  logErrorsToRedis?: boolean;
  logBehaviorsToRedis?: boolean;
  context?: string[];
  logExcludeContext?: string[];
  /** Set by the CLI from the --config file (not flags): its `state:` section, and what to write back. */
  savedState?: unknown;
  configToSave?: Record<string, unknown>;
}

const SAVE_STATE_MODES: readonly SaveStateMode[] = ["never", "partial", "always"];

/** browsertrix-crawler 1.14.1's log contexts (LOG_CONTEXT_TYPES): --context takes any of them. */
export const BTX_LOG_CONTEXTS = [
  "general", "worker", "recorder", "recorderNetwork", "writer", "state", "redis", "storage", "text", "exclusion",
  "screenshots", "screencast", "originOverride", "healthcheck", "browser", "blocking", "behavior", "behaviorScript",
  "behaviorScriptCustom", "jsError", "fetch", "pageStatus", "memoryStatus", "crawlStatus", "links", "sitemap", "wacz",
  "replay", "proxy", "scope", "robots", "dedupe",
];

/** The contexts this crawler logs under that browsertrix-crawler does not have. */
export const OWN_LOG_CONTEXTS = ["crawl", "page", "capture", "stats", "history", "log", "media"];

/** browsertrix-crawler's default --logExcludeContext (noisy contexts). */
export const DEFAULT_EXCLUDE_LOG_CONTEXTS = ["recorderNetwork", "jsError", "screencast"];

export const DEFAULT_SAVE_STATE_INTERVAL_SECONDS = 300;
export const DEFAULT_SAVE_STATE_HISTORY = 5;

export function stateOptions(flags: RawStateFlags): StateOptions {
  const saveState = (flags.saveState ?? "partial").trim() as SaveStateMode;
  if (!SAVE_STATE_MODES.includes(saveState)) throw new OptionsError(`--saveState must be one of ${SAVE_STATE_MODES.join(", ")}, got ${JSON.stringify(flags.saveState)}`);
  const interval = flags.saveStateInterval === undefined ? DEFAULT_SAVE_STATE_INTERVAL_SECONDS : Number(flags.saveStateInterval.trim());
  if (!Number.isFinite(interval) || interval <= 0) throw new OptionsError(`--saveStateInterval must be a number of seconds above 0, got ${JSON.stringify(flags.saveStateInterval)}`);
  const history = flags.saveStateHistory === undefined ? DEFAULT_SAVE_STATE_HISTORY : Number(flags.saveStateHistory.trim());
  if (!Number.isInteger(history) || history < 1) throw new OptionsError(`--saveStateHistory must be a whole number of files, at least 1, got ${JSON.stringify(flags.saveStateHistory)}`);
  return {
    saveState,
    saveStateIntervalSeconds: interval,
    saveStateHistory: history,
    resumeFrom: flags.savedState === undefined || flags.savedState === null ? null : savedCrawlState(flags.savedState),
    configToSave: flags.configToSave ?? {},
    writePagesToRedis: flags.writePagesToRedis ?? false,
    logErrorsToRedis: flags.logErrorsToRedis ?? false,
    logBehaviorsToRedis: flags.logBehaviorsToRedis ?? false,
    logContexts: contextList("context", flags.context ?? []),
    logExcludeContexts: flags.logExcludeContext === undefined ? [...DEFAULT_EXCLUDE_LOG_CONTEXTS] : contextList("logExcludeContext", flags.logExcludeContext),
  };
}

function contextList(flag: string, values: string[]): string[] {
  const names = values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  for (const name of names) {
    if (!BTX_LOG_CONTEXTS.includes(name) && !OWN_LOG_CONTEXTS.includes(name)) {
      throw new OptionsError(`--${flag}: unknown log context ${JSON.stringify(name)} (one of ${[...OWN_LOG_CONTEXTS, ...BTX_LOG_CONTEXTS].join(", ")})`);
    }
  }
  return [...new Set(names)];
}

/** Check a `state:` section's shape (a hand-edited or foreign file must fail clearly, not half-load). */
export function savedCrawlState(value: unknown): SavedCrawlState {
  const where = "--config: state";
  if (typeof value !== "object" || Array.isArray(value) || value === null) throw new OptionsError(`${where} must be a mapping (finished, queued, pending, ...)`);
  const raw = value as Record<string, unknown>;
  const strings = (key: string, json: boolean): string[] => {
    const list = raw[key] ?? [];
    if (!Array.isArray(list)) throw new OptionsError(`${where}.${key} must be a list`);
    return list.map((item, i) => {
      // browsertrix-crawler accepts pending entries as objects too.
      const text = json && typeof item === "object" && item !== null ? JSON.stringify(item) : item;
      if (typeof text !== "string") throw new OptionsError(`${where}.${key}[${i}] must be a string`);
      if (json) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          throw new OptionsError(`${where}.${key}[${i}] is not JSON: ${text.slice(0, 80)}`);
        }
        const url = (parsed as { url?: unknown; newUrl?: unknown } | null)?.[key === "extraSeeds" ? "newUrl" : "url"];
        if (key !== "errors" && typeof url !== "string") throw new OptionsError(`${where}.${key}[${i}] has no URL: ${text.slice(0, 80)}`);
      }
      return text;
    });
  };
  const done = raw.done;
  const budgetCounts = raw.budgetCounts === undefined ? undefined : savedBudgetCounts(raw.budgetCounts, `${where}.budgetCounts`);
  if (done !== undefined && typeof done !== "number" && !Array.isArray(done)) throw new OptionsError(`${where}.done must be a number or a list`);
  return {
    ...(typeof raw.id === "string" ? { id: raw.id } : {}),
    finished: strings("finished", false),
    queued: strings("queued", true),
    pending: strings("pending", true),
    failed: strings("failed", true),
    errors: strings("errors", true),
    extraSeeds: strings("extraSeeds", true),
    excluded: strings("excluded", false),
    sitemapDone: raw.sitemapDone === true,
    ...(Array.isArray(done) ? { done: strings("done", true) } : typeof done === "number" ? { done } : {}),
    ...(budgetCounts ? { budgetCounts } : {}),
  };
}

/** Ours: the budgets' counts (savedState.ts): mappings of numbers, and seedEnds of budget names. */
function savedBudgetCounts(value: unknown, where: string): BudgetCounts {
  const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isMapping(value)) throw new OptionsError(`${where} must be a mapping`);
  const mapping = <T>(key: keyof BudgetCounts, valid: (v: unknown) => v is T, what: string): Record<string, T> => {
    const raw = value[key] ?? {};
    if (!isMapping(raw)) throw new OptionsError(`${where}.${key} must be a mapping`);
    for (const [name, v] of Object.entries(raw)) {
      if (!valid(v)) throw new OptionsError(`${where}.${key}.${name} must be ${what}, got ${JSON.stringify(v)}`);
    }
    return raw as Record<string, T>;
  };
  const count = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
  const budgetEnd = (v: unknown): v is string => v === "pageLimit" || v === "sizeLimit";
  return {
    seedPages: mapping("seedPages", count, "a number"),
    seedBytes: mapping("seedBytes", count, "a number"),
    hostPages: mapping("hostPages", count, "a number"),
    seedEnds: mapping("seedEnds", budgetEnd, "pageLimit or sizeLimit"),
  };
}
