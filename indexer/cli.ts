#!/usr/bin/env -S node --max-semi-space-size=8
// A young generation of 8 MB instead of 16: the importer's per-line garbage dies young either way, so
// a bigger one only adds RSS (about 8 MB less peak RSS, same CPU; smaller costs CPU): see bench/indexer.ts.
import { Command, CommanderError } from "commander";
import { cancelCrawl, CancelRefusedError, commitCrawl, connectDedupeIndex, newHolderId } from "../src/dedupe/index.js";
import { errorMessage, logger } from "../src/log/logger.js";
import { VERSION } from "../src/version.js";
import { RemovalRefusedError } from "./removal.js";
import { runImport } from "./runImport.js";
import { SourceError } from "./sources.js";

/** Exit codes of `indexer` (documented in docs/user-guide/dedupe.md). */
export const IndexerExit = { Ok: 0, Failed: 1, BadUsage: 2, SomeEntriesFailed: 3 } as const;

interface IndexerFlags {
  redisDedupeUrl: string;
  sourceUrl?: string;
  sourceCrawlId?: string;
  remove?: boolean;
  force?: boolean;
  history?: boolean;
  commitCrawlId?: string;
  cancelCrawlId?: string;
  logLevel: "debug" | "info" | "warn" | "error";
}

export function buildIndexerProgram(): Command {
  return new Command("indexer")
    .description("Build or update the dedupe index from WACZ files, purge removed crawls, or commit/cancel a crawl.")
    .version(VERSION)
    .requiredOption("--redisDedupeUrl <url>", "Redis holding the dedupe index", process.env.REDIS_DEDUPE_URL)
    .option("--sourceUrl <source>", "a WACZ or a multi-WACZ JSON manifest: local path, file:// or http(s):// URL")
    .option("--sourceCrawlId <id>", "crawl id for a single WACZ source (default: its file name without .wacz)")
    .option("--remove", "purge crawls that are in the index but no longer in the manifest")
    .option("--force", "with --remove: purge even if WACZ files that stay depend on removed crawls")
    .option("--history", "also build the capture history (history, --refresh) from the CDX: dates, statuses, digests; about halves the import speed")
    .option("--commitCrawlId <id>", "commit a finished crawl to the merged index")
    .option("--cancelCrawlId <id>", "drop an uncommitted crawl's keys from the index")
    .option("--logLevel <level>", "minimum log level: debug, info, warn, error", "info")
    .allowExcessArguments(false);
}

async function main(argv: string[]): Promise<number> {
  const program = buildIndexerProgram().exitOverride();
  program.configureOutput({ writeErr: (text) => process.stderr.write(text.split("\n")[0] + "\n") });
  let flags: IndexerFlags;
  try {
    program.parse(argv);
    flags = program.opts<IndexerFlags>();
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : IndexerExit.BadUsage;
    throw err;
  }
  const usage = (message: string) => (process.stderr.write(`indexer: ${message}\n`), IndexerExit.BadUsage);
  const modes = [flags.sourceUrl, flags.commitCrawlId, flags.cancelCrawlId].filter(Boolean).length;
  if (modes !== 1) return usage("give exactly one of --sourceUrl, --commitCrawlId, --cancelCrawlId");
  if (!/^rediss?:\/\/[^/]/.test(flags.redisDedupeUrl)) return usage(`--redisDedupeUrl must be a redis:// URL, got ${JSON.stringify(flags.redisDedupeUrl)}`);
  if ((flags.remove || flags.force) && !flags.sourceUrl) return usage("--remove and --force go with --sourceUrl");
  if (flags.force && !flags.remove) return usage("--force goes with --remove");
  if (!["debug", "info", "warn", "error"].includes(flags.logLevel)) return usage("--logLevel must be debug, info, warn or error");
  logger.setLevel(flags.logLevel);

  let redis;
  try {
    redis = await connectDedupeIndex(flags.redisDedupeUrl, "dedupe Redis (--redisDedupeUrl)");
  } catch (err) {
    process.stderr.write(`indexer: ${errorMessage(err)}\n`);
    return IndexerExit.Failed;
  }
  try {
    if (flags.commitCrawlId) {
      const result = await commitCrawl(redis, flags.commitCrawlId);
      logger.info("indexer", result.committed ? "crawl committed" : "crawl was already committed", { ...result });
      return IndexerExit.Ok;
    }
    if (flags.cancelCrawlId) {
      await cancelCrawl(redis, flags.cancelCrawlId);
      logger.info("indexer", "crawl cancelled", { crawlId: flags.cancelCrawlId });
      return IndexerExit.Ok;
    }
    const summary = await runImport(redis, {
      sourceUrl: flags.sourceUrl!,
      sourceCrawlId: flags.sourceCrawlId,
      remove: Boolean(flags.remove),
      force: Boolean(flags.force),
      importerId: newHolderId(),
      history: Boolean(flags.history),
    });
    if (summary.failed.length) {
      process.stderr.write(
        `indexer: ${summary.failed.length} entr${summary.failed.length === 1 ? "y" : "ies"} failed (the others were imported): ` +
          summary.failed.map((f) => `${f.entry}: ${f.message}`).join("; ") + "\n",
      );
      return IndexerExit.SomeEntriesFailed;
    }
    return IndexerExit.Ok;
  } catch (err) {
    if (err instanceof SourceError || err instanceof RemovalRefusedError || err instanceof CancelRefusedError) {
      process.stderr.write(`indexer: ${err.message}\n`);
      return IndexerExit.Failed;
    }
    throw err;
  } finally {
    redis.disconnect();
  }
}

main(process.argv).then(
  async (code) => {
    await logger.close();
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`indexer: ${errorMessage(err)}\n`);
    process.exit(IndexerExit.Failed);
  },
);
