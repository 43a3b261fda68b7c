#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Command, CommanderError } from "commander";
import { ExitCode } from "../lifecycle/exitCodes.js";
import { errorMessage, logger } from "../log/logger.js";
import { runReplay, ReplayUsageError, type ReplayOptions } from "../replay/replayCommand.js";
import { VERSION } from "../version.js";

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * `replay`: open an archive with every WACZ it depends on. A deduplicated crawl's revisits point into earlier
 * crawls' WACZ files (datapackage.json relation.requires): they are found, checked and served together.
 */
export function buildReplayProgram(): Command {
  return new Command("replay")
    .description(
      "Open an archive in ReplayWeb.page with every WACZ it requires (relation.requires, followed transitively), each found by name, hash and size and its SHA-256 checked; or list the set (--list), or write it as one file (--export).",
    )
    .version(VERSION)
    .argument("<source...>", "a .wacz file, a collection folder, a multi-WACZ .json, or an http(s):// or s3:// URL of one")
    .option("--list", "print the resolved set, one line per WACZ (name sha256:<hex> size where), dependencies first, check that every revisit resolves to a response, and exit")
    .option("--export <file>", "write the set as one file: FILE.wacz, a package ReplayWeb.page opens alone, or FILE.json, a multi-WACZ JSON (the indexer's --sourceUrl format)")
    .option("--from <url>", "also look for required WACZ files under this http(s) base URL (repeatable)", collect)
    .option("--cwd <dir>", "where crawls write their collections: required WACZ files are looked for in every <cwd>/collections/*", "crawls")
    .option("--allowMissing", "open what is there when a required WACZ is missing (the replay's first page lists what is missing)")
    .option("--host <address>", "serve on this address", "127.0.0.1")
    .option("--port <n>", "serve on this port (0: any free port)", "0")
    .allowExcessArguments(false);
}

interface ReplayFlags {
  list?: boolean;
  export?: string;
  from?: string[];
  cwd: string;
  allowMissing?: boolean;
  host: string;
  port: string;
}

export function replayOptionsOf(sources: string[], flags: ReplayFlags): ReplayOptions {
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ReplayUsageError(`--port takes a port number from 0 to 65535; got ${JSON.stringify(flags.port)}`);
  if (flags.list && flags.export) throw new ReplayUsageError("--list and --export cannot be given together");
  if (flags.export && !/\.(wacz|json)$/i.test(flags.export)) throw new ReplayUsageError(`--export writes a .wacz or a .json file; got ${JSON.stringify(flags.export)}`);
  for (const base of flags.from ?? []) {
    if (!/^https?:\/\/[^/]/i.test(base)) throw new ReplayUsageError(`--from takes an http(s):// URL; got ${JSON.stringify(base)}`);
  }
  return {
    sources,
    mode: flags.list ? { kind: "list" } : flags.export ? { kind: "export", file: resolve(flags.export) } : { kind: "serve", host: flags.host, port },
    from: flags.from ?? [],
    cwd: resolve(flags.cwd),
    allowMissing: Boolean(flags.allowMissing),
  };
}

async function main(argv: string[]): Promise<number> {
  const program = buildReplayProgram().exitOverride();
  let options: ReplayOptions;
  try {
    program.parse(argv);
    options = replayOptionsOf(program.args, program.opts<ReplayFlags>());
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : ExitCode.BadUsage;
    if (err instanceof ReplayUsageError) {
      process.stderr.write(`replay: ${err.message}\n`);
      return ExitCode.BadUsage;
    }
    throw err;
  }
  try {
    return await runReplay(options, { stdout: process.stdout, stderr: process.stderr });
  } catch (err) {
    process.stderr.write(`replay: ${errorMessage(err)}\n`);
    return err instanceof ReplayUsageError ? ExitCode.BadUsage : ExitCode.Failed;
  } finally {
    await logger.close();
  }
}

// Run only as the program itself, so that tests can import the flag definitions.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`replay: ${errorMessage(err)}\n`);
      process.exit(ExitCode.Failed);
    },
  );
}
