import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import { scrubSecrets } from "./secrets.js";

export type LogLevel = "debug" | "info" | "warn" | "error";

const LEVEL_ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogDetails = Record<string, unknown>;

export interface LogEntry {
  timestamp: string;
  logLevel: LogLevel;
  context: string;
  message: string;
  details: LogDetails;
}

export interface Milestone {
  /** A short readable account for the terminal, e.g. "12 pages, 0 failed, 1.2 MB in 0:42" (not in the JSON). */
  summary?: string;
}

/** Where stderr log entries go instead of JSON lines when a person watches a terminal. */
export interface LogView {
  /** `milestone`: set on the few info entries worth showing a person (crawl started, finished...). */
  show(entry: LogEntry, milestone: Milestone | null): void;
}

/**
 * JSON-lines logger: one object per line with timestamp, level, context and message.
 * Writes to stderr (or to a readable view of it on a terminal) and, once attached, to a log file
 * under the collection's logs/ folder.
 */
export class Logger {
  private file: WriteStream | null = null;
  private minLevel: LogLevel = "info";
  private contexts: Set<string> | null = null;
  private excludedContexts = new Set<string>();
  /** Sees every entry written, with its JSON line (e.g. to copy error lines into Redis). */
  private lineHook: ((entry: LogEntry, line: string) => void) | null = null;
  /** Called before each stderr line so a live progress line can be cleared and redrawn. */
  beforeStderrWrite: (() => void) | null = null;
  quietStderr = false;
  private view: LogView | null = null;

  setLevel(level: LogLevel): void {
    this.minLevel = level;
  }

  /**
   * Write only entries of these contexts (empty = all), never those of `excluded`: every level, errors
   * too, as browsertrix-crawler's --context and --logExcludeContext do.
   */
  setContexts(contexts: string[], excluded: string[] = []): void {
    this.contexts = contexts.length ? new Set(contexts) : null;
    this.excludedContexts = new Set(excluded);
  }

  /** Call `hook` with each entry written (after the level and context filters); null stops it. */
  onLine(hook: ((entry: LogEntry, line: string) => void) | null): void {
    this.lineHook = hook;
  }

  /** Show stderr entries in this view instead of as JSON lines (the log file keeps the JSON). */
  showIn(view: LogView | null): void {
    this.view = view;
  }

  get currentView(): LogView | null {
    return this.view;
  }

  attachFile(path: string): void {
    mkdirSync(dirname(path), { recursive: true });
    const file = createWriteStream(path, { flags: "a" });
    // A full disk must not take the crawl down through its log file: keep logging to stderr only.
    file.on("error", (err) => {
      if (this.file === file) this.file = null;
      process.stderr.write(JSON.stringify({ timestamp: new Date().toISOString(), logLevel: "warn", context: "log", message: `log file not writable any more: ${err.message}`, details: {} }) + "\n");
    });
    this.file = file;
  }

  async close(): Promise<void> {
    const file = this.file;
    this.file = null;
    if (file && !file.destroyed) await new Promise<void>((resolve) => file.end(resolve));
  }

  debug(context: string, message: string, details?: LogDetails): void {
    this.write("debug", context, message, details);
  }
  info(context: string, message: string, details?: LogDetails): void {
    this.write("info", context, message, details);
  }
  warn(context: string, message: string, details?: LogDetails): void {
    this.write("warn", context, message, details);
  }
  error(context: string, message: string, details?: LogDetails): void {
    this.write("error", context, message, details);
  }
  /**
   * Show a secret to the person running the crawl (a password it made up, a token for a page it serves):
   * on stderr only, never in the log file nor to the line hook (Redis).
   */
  toOperator(context: string, message: string): void {
    const line = JSON.stringify({ timestamp: new Date().toISOString(), logLevel: "info", context, message, details: {} }) + "\n";
    this.beforeStderrWrite?.();
    process.stderr.write(this.view ? `${message}\n` : line);
  }

  /** An info entry that a person watching the terminal sees too (the crawl started, finished, a WACZ written). */
  milestone(context: string, message: string, details?: LogDetails, summary?: string): void {
    this.write("info", context, message, details, { summary });
  }

  private write(level: LogLevel, context: string, message: string, details?: LogDetails, milestone: Milestone | null = null): void {
    if (LEVEL_ORDER[level] < LEVEL_ORDER[this.minLevel]) return;
    if ((this.contexts && !this.contexts.has(context)) || this.excludedContexts.has(context)) return;
    // Nothing the crawl was given as a secret is written, wherever a message or detail quotes it (the
    // timestamp, level and context are ours: never touched, however short a secret).
    // Each part is made into JSON once and the line put together from them (it was stringified twice).
    const timestamp = new Date().toISOString();
    const [shownMessage, messageJson] = scrubbedJson(message, () => scrubSecrets(message));
    const [shownDetails, detailsJson] = scrubbedJson(details ?? {}, () => ({}));
    const entry: LogEntry = { timestamp, logLevel: level, context, message: shownMessage, details: shownDetails };
    const line = `{"timestamp":"${timestamp}","logLevel":"${level}","context":${JSON.stringify(context)},"message":${messageJson},"details":${detailsJson}}\n`;
    this.lineHook?.(entry, line.slice(0, -1));
    if (this.view) {
      this.view.show(entry, milestone);
    } else if (!this.quietStderr) {
      this.beforeStderrWrite?.();
      process.stderr.write(line);
    }
    this.file?.write(line);
  }
}

/**
 * `value` with the secrets scrubbed, and its JSON. Scrubbed text that is no JSON any more (a replacement
 * inside an escape sequence) gives `fallback()` instead.
 */
function scrubbedJson<T>(value: T, fallback: () => T): [T, string] {
  const said = JSON.stringify(value);
  const shown = scrubSecrets(said);
  if (shown === said) return [value, said];
  try {
    return [JSON.parse(shown) as T, shown];
  } catch {
    const safe = fallback();
    return [safe, JSON.stringify(safe)];
  }
}

/** The process-wide logger. Modules log through it; the CLI configures it. */
export const logger = new Logger();

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
