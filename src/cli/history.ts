#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { listCaptures } from "../dedupe/captureHistory.js";
import { digitsToWarcDate } from "../archive/warcDate.js";
import { normalizeCrawlUrl, UrlRefusedError } from "../scope/urls.js";
import { errorMessage } from "../log/logger.js";
import { connectDedupeIndex } from "../dedupe/connectIndex.js";
import { VERSION } from "../version.js";

interface HistoryFlags {
  url: string;
  redisDedupeUrl: string;
  json?: boolean;
}

/** `history --url URL`: every capture of a URL in committed crawls, newest first. */
async function main(argv: string[]): Promise<number> {
  const program = new Command("history")
    .description("List every archived capture of a URL across committed crawls, newest first.")
    .version(VERSION)
    .requiredOption("--url <url>", "the URL to look up")
    .option("--redisDedupeUrl <url>", "Redis holding the dedupe index and capture history", process.env.REDIS_DEDUPE_URL ?? "redis://127.0.0.1:6379/0")
    .option("--json", "print JSON for machines")
    .allowExcessArguments(false)
    .exitOverride();
  program.configureOutput({ writeErr: (text) => process.stderr.write(text.split("\n")[0] + "\n") });
  let flags: HistoryFlags;
  try {
    program.parse(argv);
    flags = program.opts<HistoryFlags>();
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  let url: string;
  try {
    url = normalizeCrawlUrl(flags.url);
  } catch (err) {
    process.stderr.write(`history: ${(err as UrlRefusedError).message}\n`);
    return 2;
  }
  const redis = await connectDedupeIndex(flags.redisDedupeUrl, "dedupe Redis (--redisDedupeUrl)").catch((err: unknown) => {
    process.stderr.write(`history: ${errorMessage(err)}\n`);
    return null;
  });
  if (!redis) return 1;
  try {
    const captures = (await listCaptures(redis, url)).map((c) => ({
      url: c.url,
      date: digitsToWarcDate(c.date),
      status: c.status,
      digest: c.digest,
      crawlId: c.crawlId,
      waczFilename: c.waczFilename,
      // A 304 confirmed an earlier capture; any other capture with an original was a revisit of a payload archived already.
      ...(c.original && c.status === 304 ? { confirms: { ...(c.original.url ? { url: c.original.url } : {}), crawlId: c.original.crawlId, date: digitsToWarcDate(c.original.date) } } : {}),
      ...(c.original?.url && c.status !== 304 ? { samePayloadAs: { url: c.original.url, crawlId: c.original.crawlId, date: digitsToWarcDate(c.original.date) } } : {}),
    }));
    if (flags.json) {
      process.stdout.write(JSON.stringify(captures, null, 2) + "\n");
    } else if (!captures.length) {
      process.stdout.write(`no archived capture of ${url} in committed crawls\n`);
    } else {
      for (const c of captures) {
        const note = c.confirms ? ` (not modified since ${c.confirms.date})` : c.samePayloadAs ? ` (same payload as ${c.samePayloadAs.url} of ${c.samePayloadAs.date})` : "";
        process.stdout.write(`${c.date}  ${c.status}  ${c.digest}  ${c.crawlId}  ${c.waczFilename ?? "-"}${note}\n`);
      }
    }
    return 0;
  } finally {
    redis.disconnect();
  }
}

main(process.argv).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`history: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
