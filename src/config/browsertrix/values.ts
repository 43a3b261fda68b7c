import { OptionsError } from "../optionsError.js";

/** Values of browsertrix-crawler flags that mean one of ours under another name. */

type LogLevel = "debug" | "info" | "warn" | "error";
const LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/**
 * --logLevel: ours is one minimum level; browsertrix-crawler's is a list of the levels to show
 * (`[debug, info, warn, error, fatal]`). A list means its lowest level (fatal is shown as error).
 */
export function lowestLogLevel(value: string | undefined): LogLevel {
  const listed = (value ?? "info").split(",").map((v) => v.trim().toLowerCase()).filter(Boolean);
  const levels = listed.map((level) => {
    if (level === "fatal") return "error";
    if (!(LEVELS as readonly string[]).includes(level)) throw new OptionsError(`--logLevel must be debug, info, warn or error (or a list of them), got ${JSON.stringify(level)}`);
    return level as LogLevel;
  });
  return levels.length ? LEVELS[Math.min(...levels.map((l) => LEVELS.indexOf(l)))] : "info";
}

/**
 * --text: browsertrix-crawler's `final-to-warc` is the text after behaviors, which is what ours extracts
 * (after the load wait and behaviors); `true`/`false` are its old spellings of to-pages / nothing.
 */
export function btxText(values: string[] | undefined): string[] | undefined {
  if (!values) return values;
  const items = values.flatMap((v) => v.split(",")).map((v) => v.trim());
  if (items.length === 1 && items[0] === "false") return [];
  return items.map((v) => (v === "final-to-warc" ? "to-warc" : v === "true" ? "to-pages" : v));
}

/** --screenshot: `fullPageFinal` (after behaviors) is our `fullPage`, which is taken after behaviors too. */
export function btxScreenshots(values: string[] | undefined): string[] | undefined {
  return values?.flatMap((v) => v.split(",")).map((v) => (v.trim() === "fullPageFinal" ? "fullPage" : v.trim()));
}
