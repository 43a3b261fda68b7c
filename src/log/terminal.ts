import cliProgress from "cli-progress";
import type { LogEntry, LogView, Milestone } from "./logger.js";

/**
 * What a person at a terminal sees: warnings, errors and a few milestones as readable lines, printed
 * above a live progress bar. Routine info and debug entries stay in the JSON log file.
 */
export class TerminalDisplay implements LogView {
  private bars: cliProgress.MultiBar | null = null;
  private bar: cliProgress.SingleBar | null = null;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  show(entry: LogEntry, milestone: Milestone | null): void {
    if (entry.logLevel === "warn" || entry.logLevel === "error" || milestone) this.print(readableLine(entry, milestone?.summary));
  }

  /** One line, above the bar while there is one. */
  print(line: string): void {
    if (this.bars) {
      this.bars.log(line + "\n");
      this.bars.update();
    } else {
      this.stream.write(line + "\n");
    }
  }

  /** Start the bar; `format` uses cli-progress tokens ({bar}, {value}, {total}) and the payload's keys. */
  startBar(format: string, payload: Record<string, string>): void {
    if (this.bars) return;
    this.bars = new cliProgress.MultiBar({
      stream: this.stream,
      format,
      barsize: 20,
      barCompleteChar: "█",
      barIncompleteChar: "░",
      hideCursor: true,
      emptyOnZero: true,
      fps: 4,
    });
    this.bar = this.bars.create(0, 0, payload);
    process.once("exit", this.restoreTerminal);
  }

  /** A process that exits with the bar still up (a stuck stop) must not leave the cursor hidden and wrapping off. */
  private readonly restoreTerminal = (): void => {
    if (this.bars) this.stream.write("\x1b[?25h\x1b[?7h\n");
  };

  updateBar(value: number, total: number, payload: Record<string, string>): void {
    if (!this.bar) return;
    this.bar.setTotal(total);
    this.bar.update(value, payload);
  }

  /** Leave the bar's last state on screen; later lines print below it. */
  stopBar(): void {
    if (!this.bars) return;
    this.bars.update();
    this.bars.stop();
    this.bars = null;
    this.bar = null;
    process.removeListener("exit", this.restoreTerminal);
  }
}

/** Details that name what an entry is about, in order of preference. */
const SUBJECT_KEYS = ["url", "seeds", "path", "wacz", "file", "profileDir"] as const;

/** `warn  page failed, will retry  http://a.test/x (net::ERR_CONNECTION_REFUSED)` */
export function readableLine(entry: LogEntry, summary?: string): string {
  const details = entry.details;
  const subjectKey = SUBJECT_KEYS.find((key) => details[key] !== undefined && details[key] !== null);
  const subject = summary ?? (subjectKey === undefined ? "" : listed(details[subjectKey]));
  const error = details.error ?? details.reason;
  return oneLine(`${entry.logLevel.padEnd(5)} ${entry.message}${subject ? `  ${subject}` : ""}${typeof error === "string" && error ? ` (${error})` : ""}`);
}

function listed(value: unknown): string {
  if (!Array.isArray(value)) return String(value);
  const shown = value.slice(0, 3).join(" ");
  return value.length > 3 ? `${shown} and ${value.length - 3} more` : shown;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ");
}
