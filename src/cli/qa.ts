#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Command, CommanderError } from "commander";
import { ExitCode } from "../lifecycle/exitCodes.js";
import { errorMessage, logger } from "../log/logger.js";
import { DEFAULT_QA_THRESHOLD, runQa, type QaOptions } from "../qa/qaRun.js";
import { QaSourceError } from "../qa/qaSource.js";
import { ReplayUsageError, searchPlaces } from "../replay/replayCommand.js";
import { VERSION } from "../version.js";
import { timestampDigits } from "../archive/warcDate.js";

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * `qa`: does every page replay as it was captured? browsertrix-crawler's QA run (--qaSource), with its
 * flag names where they apply; results in <cwd>/collections/<collection>/qa.json and qa/.
 */
export function buildQaProgram(): Command {
  return new Command("qa")
    .description("Replay each page of an archive in ReplayWeb.page and compare it with what the crawl saw: screenshots, text, requests. Writes qa.json, qa/<page>.json and the report qa/index.html.")
    .version(VERSION)
    .requiredOption("--qaSource <source>", "the archive: a .wacz file, a collection folder, a multi-WACZ .json, or an http(s):// or s3:// URL of one; the WACZ files it requires (relation.requires) are found and replayed with it, as `replay` finds them")
    .option("--pages <n>", "check at most this many pages (in the archive's order); 0 = all (browsertrix-crawler: --pageLimit, --limit)", "0")
    .option("--pageLimit <n>", "same as --pages")
    .option("--limit <n>", "same as --pages")
    .option("--include <regex>", "only pages whose URL matches (repeatable; browsertrix-crawler: --scopeIncludeRx)", collect)
    .option("--scopeIncludeRx <regex>", "same as --include", collect)
    .option("--exclude <regex>", "leave out pages whose URL matches (repeatable; browsertrix-crawler: --scopeExcludeRx)", collect)
    .option("--scopeExcludeRx <regex>", "same as --exclude", collect)
    .option("--qaThreshold <score>", "pages whose overall score (0-1) is below this are listed as failing", String(DEFAULT_QA_THRESHOLD))
    .option("--qaDebugImageDiff", "also write each page's pixel difference image, qa/<page>.diff.png")
    .option("--cwd <dir>", "working directory for output; WACZ files the source requires are also looked for in <cwd>/collections/*", "crawls")
    .option("--from <url>", "also look for WACZ files the source requires under this http(s) base URL (repeatable)", collect)
    .option("--collection <name>", "output goes to <cwd>/collections/<name>/ (default: qa-<timestamp>)")
    .option("--pageLoadTimeout <seconds>", "time allowed for a replayed page to load and settle", "60")
    .option("--postLoadDelay <seconds>", "wait this long after a replayed page has settled, before comparing", "0")
    .option("--browserPath <path>", "Chromium executable (default: env BROWSER_BIN, else /usr/bin/chromium)")
    .allowExcessArguments(false);
}

interface QaFlags {
  qaSource: string;
  pages: string;
  pageLimit?: string;
  limit?: string;
  include?: string[];
  scopeIncludeRx?: string[];
  exclude?: string[];
  scopeExcludeRx?: string[];
  qaThreshold: string;
  qaDebugImageDiff?: boolean;
  cwd: string;
  from?: string[];
  collection?: string;
  pageLoadTimeout: string;
  postLoadDelay: string;
  browserPath?: string;
}

export class QaFlagError extends Error {}

function qaNumberFlag(name: string, value: string, min: number, max = Infinity): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) throw new QaFlagError(`--${name} takes a number from ${min}${max < Infinity ? ` to ${max}` : ""}; got ${JSON.stringify(value)}`);
  return n;
}

function regexes(name: string, values: string[]): RegExp[] {
  return values.map((value) => {
    try {
      return new RegExp(value);
    } catch {
      throw new QaFlagError(`--${name}: not a regular expression: ${value}`);
    }
  });
}

/** The QA run's options from its flags; also used by `crawl --qa` for the flags they share. */
export function qaOptionsOf(flags: QaFlags, now = new Date(), env: NodeJS.ProcessEnv = process.env): QaOptions & { collectionDir: string } {
  const collection = flags.collection ?? `qa-${timestampDigits(now).slice(0, 14)}`;
  if (!/^[\w.-]+$/.test(collection) || collection.startsWith(".")) throw new QaFlagError(`--collection takes letters, digits, '.', '-' and '_'; got ${JSON.stringify(collection)}`);
  const collectionDir = resolve(join(flags.cwd, "collections", collection));
  return {
    collectionDir,
    source: flags.qaSource,
    outputDir: collectionDir,
    pageLimit: qaNumberFlag("pages", flags.pages !== "0" ? flags.pages : (flags.pageLimit ?? flags.limit ?? "0"), 0),
    include: regexes("include", [...(flags.include ?? []), ...(flags.scopeIncludeRx ?? [])]),
    exclude: regexes("exclude", [...(flags.exclude ?? []), ...(flags.scopeExcludeRx ?? [])]),
    threshold: qaNumberFlag("qaThreshold", flags.qaThreshold, 0, 1),
    executablePath: flags.browserPath ?? process.env.BROWSER_BIN ?? "/usr/bin/chromium",
    pageTimeoutMs: qaNumberFlag("pageLoadTimeout", flags.pageLoadTimeout, 1) * 1000,
    quietMs: 500,
    postLoadDelayMs: qaNumberFlag("postLoadDelay", flags.postLoadDelay, 0) * 1000,
    debugImageDiff: Boolean(flags.qaDebugImageDiff),
    places: qaPlaces(flags, env),
  };
}

function qaPlaces(flags: QaFlags, env: NodeJS.ProcessEnv): QaOptions["places"] {
  for (const base of flags.from ?? []) if (!/^https?:\/\/[^/]/i.test(base)) throw new QaFlagError(`--from takes an http(s):// URL; got ${JSON.stringify(base)}`);
  try {
    return searchPlaces(resolve(flags.cwd), flags.from ?? [], env);
  } catch (err) {
    if (err instanceof ReplayUsageError) throw new QaFlagError(err.message);
    throw err;
  }
}

async function main(argv: string[]): Promise<number> {
  const program = buildQaProgram().exitOverride();
  let options: ReturnType<typeof qaOptionsOf>;
  try {
    program.parse(argv);
    options = qaOptionsOf(program.opts<QaFlags>());
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : ExitCode.BadUsage;
    if (err instanceof QaFlagError) {
      process.stderr.write(`qa: ${err.message}\n`);
      return ExitCode.BadUsage;
    }
    throw err;
  }
  try {
    const summary = await runQa(options);
    process.stdout.write(`qa: ${summary.pages} pages in ${summary.seconds} s, ${summary.below.length} below ${options.threshold}; report: ${join(options.outputDir, "qa", "index.html")}\n`);
    for (const page of summary.below) process.stdout.write(`  ${page.overall.toFixed(3)}  ${page.url}\n`);
    return ExitCode.Finished;
  } catch (err) {
    process.stderr.write(`qa: ${errorMessage(err)}\n`);
    return err instanceof QaSourceError ? ExitCode.BadUsage : ExitCode.Failed;
  } finally {
    await logger.close();
  }
}

// Run only as the program itself, so that tests can import the flag definitions.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`qa: ${errorMessage(err)}\n`);
      process.exit(ExitCode.Failed);
    },
  );
}
