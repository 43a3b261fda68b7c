import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";

export type LogLevel = "debug" | "info" | "warn" | "error";

const LEVEL_ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogDetails = Record<string, unknown>;

/**
 * JSON-lines logger: one object per line with timestamp, level, context and message.
 * Writes to stderr and, once attached, to a log file under the collection's logs/ folder.
 */
export class Logger {
  private file: WriteStream | null = null;
  private minLevel: LogLevel = "info";
  private contexts: Set<string> | null = null;
  /** Called before each stderr line so a live progress line can be cleared and redrawn. */
  beforeStderrWrite: (() => void) | null = null;
  quietStderr = false;

  setLevel(level: LogLevel): void {
    this.minLevel = level;
  }

  /** Restrict stderr/file output to these contexts (errors always pass). Empty = everything. */
  setContexts(contexts: string[]): void {
    this.contexts = contexts.length ? new Set(contexts) : null;
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

  private write(level: LogLevel, context: string, message: string, details?: LogDetails): void {
    if (LEVEL_ORDER[level] < LEVEL_ORDER[this.minLevel]) return;
    if (level !== "error" && this.contexts && !this.contexts.has(context)) return;
    const line =
      JSON.stringify({ timestamp: new Date().toISOString(), logLevel: level, context, message, details: details ?? {} }) +
      "\n";
    if (!this.quietStderr) {
      this.beforeStderrWrite?.();
      process.stderr.write(line);
    }
    this.file?.write(line);
  }
}

/** The process-wide logger. Modules log through it; the CLI configures it. */
export const logger = new Logger();

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
