import { Option, type Command } from "commander";
import { warcInfoItems } from "../groups/outputOptions.js";

/**
 * browsertrix-crawler 1.14.1's `crawl` flags, every spelling (primary name first, then its aliases) and
 * the kind of value yargs takes for it. The one table of browsertrix names: the command line registers
 * the spellings we lack as hidden options, and the config file accepts the same names as keys.
 *
 * A flag whose spelling is one of our options is implemented: its other spellings become hidden aliases of
 * our option (same value, same parsing). A flag none of whose spellings we have is accepted with a warning
 * (not implemented yet), so a browsertrix command line or config never fails on it.
 */
type BtxValue = "switch" | "value" | "optional" | "list";

const BTX_FLAGS: readonly (readonly [spellings: string, takes: BtxValue])[] = [
  ["seeds url", "list"], ["seedFile urlFile", "value"], ["workers w", "value"], ["crawlId id", "value"],
  ["waitUntil", "list"], ["depth", "value"], ["extraHops", "value"], ["pageLimit limit", "value"],
  ["maxPageLimit", "value"], ["pageLoadTimeout timeout", "value"], ["scopeType", "value"],
  ["scopeIncludeRx include", "value"], ["scopeExcludeRx exclude", "value"], ["allowHashUrls", "switch"],
  ["selectLinks linkSelector", "list"], ["alwaysAddBehaviorLinks", "switch"], ["clickSelector", "value"],
  ["blockRules", "list"], ["blockMessage", "value"], ["blockAds blockads", "switch"], ["adBlockMessage", "value"],
  ["collection c", "value"], ["headless", "switch"], ["driver", "value"],
  ["generateCDX generatecdx generateCdx", "switch"], ["combineWARC combinewarc combineWarc", "switch"],
  ["rolloverSize", "value"], ["generateWACZ generatewacz generateWacz", "switch"], ["useSHA1", "switch"],
  ["logging", "list"], ["logLevel", "list"], ["context logContext", "list"], ["logExcludeContext", "list"],
  ["text", "list"], ["cwd", "value"], ["mobileDevice", "value"], ["userAgent", "value"], ["userAgentSuffix", "value"],
  ["useSitemap sitemap", "optional"], ["sitemapFromDate sitemapFrom", "value"], ["sitemapToDate sitemapTo", "value"],
  ["statsFilename", "value"], ["behaviors", "list"], ["behaviorTimeout", "value"], ["postLoadDelay", "value"],
  ["pageExtraDelay delay", "value"], ["profile loadProfile", "value"], ["saveProfile", "optional"],
  ["screenshot", "list"], ["screencastPort", "value"], ["screencastRedis", "switch"], ["warcInfo warcinfo", "optional"],
  ["redisStoreUrl", "value"], ["redisDedupeUrl", "value"], ["dedupePagesMinDepth", "value"], ["dedupeConcurrent", "switch"],
  ["saveState", "value"], ["saveStateInterval", "value"], ["saveStateHistory", "value"], ["sizeLimit", "value"],
  ["diskUtilization", "value"], ["timeLimit", "value"], ["healthCheckPort", "value"], ["overwrite", "switch"],
  ["waitOnDone", "switch"], ["restartsOnError", "switch"], ["netIdleWait", "value"], ["netIdleMaxRequests", "value"],
  ["lang", "value"], ["title", "value"], ["description desc", "value"], ["originOverride", "list"],
  ["logErrorsToRedis", "switch"], ["logBehaviorsToRedis", "switch"], ["writePagesToRedis", "switch"],
  ["maxPageRetries retries", "value"], ["failOnFailedSeed", "switch"], ["failOnFailedLimit", "value"],
  ["failOnInvalidStatus", "switch"], ["failOnContentCheck", "switch"], ["customBehaviors", "list"],
  ["saveStorage", "switch"], ["debugAccessRedis", "switch"], ["debugAccessBrowser", "switch"], ["warcPrefix", "value"],
  ["serviceWorker sw", "value"], ["proxyServer", "value"], ["proxyServerPreferSingleProxy", "switch"],
  ["proxyServerConfig", "value"], ["dryRun", "switch"], ["qaSource", "value"], ["qaDebugImageDiff", "switch"],
  ["sshProxyPrivateKeyFile", "value"], ["sshProxyKnownHostsFile", "value"], ["extraChromeArgs", "list"],
  ["useRobots robots", "switch"], ["robotsAgent", "value"], ["reportSkipped", "switch"],
  ["rateLimitStatusCodes", "list"], ["rateLimitOnMatch", "list"], ["rateLimitTimeout", "value"],
  ["rateLimitMaxRetries", "value"], ["rateLimitInterruptCount", "value"], ["addRedirectedSeeds", "switch"],
  ["config", "value"],
];

/** browsertrix-crawler flags whose effect is already ours without a flag: accepted silently. */
const ALREADY_SO: Record<string, string> = { headless: "the browser is headless unless --headful is given" };

/**
 * browsertrix-crawler flags that cannot apply here, and why: accepted (a browsertrix command line or config
 * never fails on them), warned about with the reason instead of "not implemented yet".
 */
export const CANNOT_APPLY: Record<string, string> = {
  driver: "a browsertrix-crawler driver script drives its internal crawler object (crawler.loadPage, crawler.crawlState...), which this crawler does not have; --customBehaviors runs scripts in each page",
  useSHA1: "payload digests stay sha256: they are the dedupe index's keys, shared with the crawls already in it (a sha1 crawl would match none of them), and browsertrix-crawler 1.14.1 itself still digests captured responses with sha256",
  qaSource: "a QA run replays an archive with the `qa` command (qa --qaSource <wacz|json|url>, browsertrix-crawler's qa entrypoint); `crawl --qa` checks the crawl's own WACZ when it ends",
};

const flagOf = (spelling: string): string => (spelling.length === 1 ? `-${spelling}` : `--${spelling}`);

/** A browsertrix spelling of one of our options: hidden, its value stored under our option's name. */
class AliasOption extends Option {
  constructor(readonly spelling: string, readonly target: Option) {
    const arg = target.required ? " <value>" : target.optional ? " [value]" : "";
    super(`${flagOf(spelling)}${target.variadic ? arg.replace(/[>\]]$/, "...$&") : arg}`);
    this.hideHelp();
    if (target.parseArg) this.argParser(target.parseArg);
    if (target.presetArg !== undefined) this.preset(target.presetArg);
  }

  override attributeName(): string {
    return this.target.attributeName();
  }
}

/** A browsertrix flag we do not implement yet: accepted (any value), then warned about. */
class NotImplementedOption extends Option {
  constructor(readonly btxName: string, spelling: string, takes: BtxValue) {
    const arg = { switch: "", value: " <value>", optional: " [value]", list: " <values...>" }[takes];
    super(`${flagOf(spelling)}${arg}`);
    this.hideHelp();
  }

  override attributeName(): string {
    return this.btxName;
  }
}

/**
 * Register every browsertrix-crawler spelling our program lacks: aliases of ours where we implement the
 * flag (our option's help lists the browsertrix spellings), placeholders where we do not. Call it after
 * all our own options are defined.
 */
export function addBrowsertrixNames(program: Command): Command {
  const byFlag = new Map<string, Option>();
  const notYet: string[] = [];
  for (const option of program.options) for (const flag of [option.long, option.short]) if (flag) byFlag.set(flag, option);
  for (const [spellingList, takes] of BTX_FLAGS) {
    const spellings = spellingList.split(" ");
    const ours = spellings.map((s) => byFlag.get(flagOf(s))).find((o) => o !== undefined);
    const missing = spellings.filter((s) => !byFlag.has(flagOf(s)));
    if (missing.length === 0) continue;
    if (ours) {
      for (const spelling of missing) program.addOption(new AliasOption(spelling, ours));
      ours.description += ` (browsertrix-crawler: ${spellings.map(flagOf).join(", ")})`;
      continue;
    }
    const primary = new NotImplementedOption(spellings[0], spellings[0], takes);
    program.addOption(primary);
    for (const alias of spellings.slice(1)) program.addOption(new NotImplementedOption(spellings[0], alias, takes));
    if (!(spellings[0] in ALREADY_SO) && !(spellings[0] in CANNOT_APPLY)) notYet.push(flagOf(spellings[0]));
  }
  if (notYet.length) program.addHelpText("after", `\nAccepted for browsertrix-crawler compatibility, with a warning, but not implemented yet:\n  ${notYet.join(" ")}\n`);
  program.addHelpText("after", `${notYet.length ? "" : "\n"}Accepted for browsertrix-crawler compatibility, with a warning, but cannot apply here:\n  ${Object.keys(CANNOT_APPLY).map(flagOf).join(" ")}\n`);
  return program;
}

/** The config-file key of an option: its own spelling for a browsertrix alias, else its attribute name. */
export function configKeyOf(option: Option): string {
  if (option instanceof AliasOption || option instanceof NotImplementedOption) return option.name();
  return option.attributeName();
}

export function isNotImplemented(option: Option): boolean {
  return option instanceof NotImplementedOption && !(option.attributeName() in ALREADY_SO);
}

/** Defaults of flags we do not implement that already describe what we do: giving them asks for nothing (none at present). */
const BTX_DEFAULTS: Record<string, string> = {};

/** Flags we do not implement whose 0 is not "off" (none at present). */
const ZERO_ASKS = new Set<string>();

/** Whether a value of a flag we do not implement asks for something (false, 0, "", [] and the defaults above do not). */
export function asksForSomething(name: string, value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === "") return false;
  if ((value === 0 || value === "0") && !ZERO_ASKS.has(name)) return false;
  if (Array.isArray(value) && value.length === 0) return false;
  return !(name in BTX_DEFAULTS && (Array.isArray(value) ? value.join(",") : String(value)) === BTX_DEFAULTS[name]);
}

/**
 * Keys of the Browsertrix service's crawl config that are its own bookkeeping, not crawler settings
 * (browsertrix-crawler ignores unknown keys): accepted in --config with a note, never an error.
 */
export const SERVICE_KEYS: Record<string, string> = {
  seedFileId: "the Browsertrix service's id of an uploaded seed file (it passes the file itself as seedFile)",
};

/** Notes about browsertrix-crawler names taken in an approximate way, by program (config seeds...). */
const notes = new WeakMap<Command, string[]>();

export function addCompatNote(program: Command, note: string): void {
  notes.set(program, [...(notes.get(program) ?? []), note]);
}

/** One line per browsertrix-crawler flag given (command line or config) that we accept but do not implement yet. */
export function compatWarnings(program: Command): string[] {
  const given = new Set<string>();
  for (const option of program.options) {
    if (!isNotImplemented(option)) continue;
    const name = option.attributeName();
    const source = program.getOptionValueSource(name);
    if ((source === "cli" || source === "config") && asksForSomething(name, program.getOptionValue(name))) given.add(name);
  }
  return [
    ...[...given].map((name) => name in CANNOT_APPLY
      ? `--${name} accepted for browsertrix-crawler compatibility but not applied: ${CANNOT_APPLY[name]}`
      : `accepted for browsertrix-crawler compatibility but not implemented yet: --${name}`),
    ...(notes.get(program) ?? []),
  ];
}

/** browsertrix-crawler behaviors we do not have yet: taken out of --behaviors with a warning (it ignores unknown ones too). */
const BEHAVIORS_NOT_YET: string[] = [];
/** --logging values of ours; browsertrix-crawler's others (jserrors...) change nothing here yet. */
const OUR_LOGGING = ["stats", "debug", "stderr-json"];

/** Values of browsertrix flags we accept but cannot honour yet, taken out with a note (after the config is applied). */
export function setAsideUnimplementedValues(program: Command, env: NodeJS.ProcessEnv = process.env): void {
  const profile = program.getOptionValue("profile") as string | undefined;
  if (typeof profile === "string" && profile.startsWith("@") && !env.STORE_ENDPOINT_URL) {
    // The Browsertrix service's form: a file in its upload storage, which only STORE_* settings name.
    program.setOptionValueWithSource("profile", undefined, program.getOptionValueSource("profile"));
    addCompatNote(program, `--profile ${profile} names a profile in the upload storage, but STORE_ENDPOINT_URL is not set: the crawl runs without a profile`);
  }
  const logging = program.getOptionValue("logging") as string | undefined;
  const otherLogging = typeof logging === "string" ? logging.split(",").map((v) => v.trim()).filter((v) => v && !OUR_LOGGING.includes(v)) : [];
  if (otherLogging.length) addCompatNote(program, `accepted for browsertrix-crawler compatibility but not implemented yet: --logging ${otherLogging.join(",")}`);
  const warcInfo = program.getOptionValue("warcInfo") as string[] | undefined;
  if (Array.isArray(warcInfo)) {
    // A bare --warcInfo is "": browsertrix-crawler ignores it too.
    if (warcInfo.includes("")) addCompatNote(program, "--warcInfo without a field ignored");
    const { items, ignored } = warcInfoItems(warcInfo);
    program.setOptionValueWithSource("warcInfo", items, program.getOptionValueSource("warcInfo"));
    for (const line of ignored) addCompatNote(program, `--warcInfo ${JSON.stringify(line)} ignored: not a "name: value" or name=value field`);
  }
  const behaviors = program.getOptionValue("behaviors") as string | undefined;
  if (typeof behaviors !== "string") return;
  const names = behaviors.split(",").map((n) => n.trim());
  const notYet = names.filter((n) => BEHAVIORS_NOT_YET.includes(n));
  if (notYet.length === 0) return;
  program.setOptionValueWithSource("behaviors", names.filter((n) => !BEHAVIORS_NOT_YET.includes(n)).join(","), program.getOptionValueSource("behaviors"));
  addCompatNote(program, `accepted for browsertrix-crawler compatibility but not implemented yet: --behaviors ${notYet.join(",")}`);
}

/**
 * browsertrix-crawler (yargs) also takes object fields as dotted flags: `--warcinfo.operator NAME` or
 * `--warcInfo.operator=NAME`. Rewrite them to `--warcInfo operator=NAME` so the parser sees one known flag.
 */
export function foldDottedFlags(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const match = /^--(warcInfo|warcinfo)\.([^=]+)(?:=(.*))?$/s.exec(args[i]);
    if (!match) {
      out.push(args[i]);
      continue;
    }
    const value = match[3] ?? (i + 1 < args.length && !args[i + 1].startsWith("-") ? args[++i] : "");
    out.push(`--${match[1]}`, `${match[2]}=${value}`);
  }
  return out;
}
