import { waczSigningFromEnv, type WaczSigning } from "../../upload/waczSigning.js";
import { OptionsError } from "../optionsError.js";

/** What the crawl writes besides its WARC records (browsertrix-crawler's flag names and file layout). */
export interface OutputOptions {
  /** --warcInfo: fields added to (or replacing) the warcinfo record of every WARC file, in order given. */
  warcInfo: Record<string, string>;
  /**
   * WARC file names start with `<warcPrefix>-<crawlId>-`: env WARC_PREFIX, else --warcPrefix, else "rec"
   * (browsertrix-crawler's order: the environment wins, as its service sets it per crawl).
   */
  warcPrefix: string;
  /** --combineWARC: all WARC files appended into <collection>_<n>.warc.gz in the collection folder. */
  combineWARC: boolean;
  /** --generateCDX: a sorted CDXJ index of every WARC file in indexes/index.cdxj. */
  generateCDX: boolean;
  /** --reportSkipped: pages found but not queued, with why, in reports/skippedPages.jsonl. */
  reportSkipped: boolean;
  /** WACZ_SIGN_URL / WACZ_SIGN_TOKEN: each WACZ's datapackage signed by that server; null = unsigned. */
  waczSigning: WaczSigning | null;
  /**
   * --qa: each page also gets a urn:pageinfo: record (what it requested, for QA), and once the crawl has
   * ended its WACZ is replayed and scored (src/qa/); pages below `threshold` are listed. null = no QA.
   */
  qa: { threshold: number; debugImageDiff: boolean } | null;
}

export interface RawOutputFlags {
  /** `key=value` items (the command line, `--warcinfo.key value`, or a config file's mapping). */
  warcInfo?: string[];
  warcPrefix?: string;
  combineWARC?: boolean;
  generateCDX?: boolean;
  reportSkipped?: boolean;
  qa?: boolean;
  qaThreshold?: string;
  qaDebugImageDiff?: boolean;
}

export const DEFAULT_WARC_PREFIX = "rec";

/** A warcinfo field name is a WARC header token: no separators, spaces or control characters. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** An empty prefix means the default, as in browsertrix-crawler. A prefix is part of a file name: no path separator, no leading dot or dash. */
const PREFIX = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function outputOptions(flags: RawOutputFlags, env: NodeJS.ProcessEnv): OutputOptions {
  return {
    warcInfo: warcInfoFields(flags.warcInfo ?? []),
    warcPrefix: warcPrefix(flags.warcPrefix, env.WARC_PREFIX),
    combineWARC: flags.combineWARC ?? false,
    generateCDX: flags.generateCDX ?? false,
    reportSkipped: flags.reportSkipped ?? false,
    waczSigning: waczSigning(env),
    qa: flags.qa ? { threshold: qaThreshold(flags.qaThreshold), debugImageDiff: flags.qaDebugImageDiff ?? false } : null,
  };
}

/** The default --qaThreshold: a page replaying with less than 90% of its pixels, text or requests is listed. */
export const DEFAULT_QA_THRESHOLD = 0.9;

function qaThreshold(value: string | undefined): number {
  const threshold = value === undefined ? DEFAULT_QA_THRESHOLD : Number(value);
  if (!Number.isFinite(threshold) || threshold < 0 || threshold > 1) throw new OptionsError(`--qaThreshold takes a score from 0 to 1, got ${JSON.stringify(value)}`);
  return threshold;
}

function waczSigning(env: NodeJS.ProcessEnv): WaczSigning | null {
  try {
    return waczSigningFromEnv(env);
  } catch (err) {
    throw new OptionsError(err instanceof Error ? err.message : String(err));
  }
}

/**
 * --warcInfo items as given: `name=value`, or browsertrix-crawler's string form, lines of `name: value`
 * (ONB's real command line: `--warcInfo "operator: ONB"`; browsertrix-crawler spreads that string into junk
 * fields). Returns the fields as `name=value` items, and what is not a field, to be warned about: a
 * malformed --warcInfo never fails a crawl.
 */
export function warcInfoItems(given: string[]): { items: string[]; ignored: string[] } {
  const items: string[] = [];
  const ignored: string[] = [];
  for (const line of given.flatMap((item) => item.split(/\r?\n/))) {
    if (line.trim() === "") continue;
    const eq = line.indexOf("=");
    const colon = line.indexOf(":");
    // `name=value` unless a colon comes first (`isPartOf: a=b` is the string form).
    const sep = eq >= 0 && (colon < 0 || eq < colon) ? eq : colon;
    const name = sep < 0 ? "" : line.slice(0, sep).trim();
    if (!FIELD_NAME.test(name)) ignored.push(line);
    else items.push(`${name}=${line.slice(sep + 1).trim()}`);
  }
  return { items, ignored };
}

function warcInfoFields(items: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    const name = eq < 0 ? item : item.slice(0, eq);
    if (eq < 0 || !FIELD_NAME.test(name)) {
      throw new OptionsError(`--warcInfo takes name=value fields (or --warcInfo.name value), got ${JSON.stringify(item)}`);
    }
    const value = item.slice(eq + 1);
    // One field is one line of the record (application/warc-fields).
    if (/[\r\n]/.test(value)) throw new OptionsError(`--warcInfo ${name}: the value must be on one line`);
    fields[name] = value;
  }
  return fields;
}

function warcPrefix(flag: string | undefined, fromEnv: string | undefined): string {
  const [prefix, source] = fromEnv ? [fromEnv, "WARC_PREFIX"] : flag ? [flag, "--warcPrefix"] : [DEFAULT_WARC_PREFIX, ""];
  if (!PREFIX.test(prefix)) {
    throw new OptionsError(`${source} may hold only letters, digits, '.', '_' and '-' (it starts WARC file names), got ${JSON.stringify(prefix)}`);
  }
  return prefix;
}
