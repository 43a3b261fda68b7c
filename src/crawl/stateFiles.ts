import { mkdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { CrawlOptions } from "../config/crawlOptions.js";
import { stateFileChunks, withoutUrlPasswords, withUrlPasswords } from "../config/stateFile.js";
import { WITHHELD_KEY, type WithheldSecrets } from "../config/savedConfig.js";
import { writeWholeFile } from "../durable/wholeFile.js";
import { errorMessage, logger } from "../log/logger.js";
import { SeedScope } from "../scope/seedScope.js";
import { crawlKey } from "../scope/urls.js";
import type { QueuedPage } from "../frontier/frontier.js";
import { isLocalProcessGone } from "../ownership/processIdentity.js";
import { loadCrawlState, serializeCrawlState } from "../frontier/savedState.js";
import { withTimeout } from "../util/deadline.js";
import type { JoinedCrawl } from "./joinCrawl.js";
import { timestampDigits } from "../archive/warcDate.js";

const SERIALIZE_DEADLINE_MS = 60_000;

/**
 * Resume from the `state:` section of the --config file (a --saveState file, ours or browsertrix-
 * crawler's): before the seeds are queued, so seeds it lists as finished are not crawled again.
 */
export async function resumeFromStateFile(options: CrawlOptions, session: JoinedCrawl): Promise<void> {
  const fromFile = options.state.resumeFrom;
  if (!fromFile) return;
  // The file left the URLs' passwords out: the seeds given now have them.
  const saved = withUrlPasswords(fromFile, options.seeds);
  const scopes = options.seeds.map((seed, i) => new SeedScope(seed, options.seedScopes[i]));
  const keys = session.membership.keys;
  const result = await loadCrawlState(session.state, session.redis, keys, saved, {
    maxRetries: options.maxPageRetries,
    keyOf: (url) => keyOf(url, scopes),
    inScope: (page) => inScope(page, scopes),
    processId: session.membership.processId,
    loaderGone: async (owner) => isLocalProcessGone(owner) || !(await session.membership.isAlive(owner)),
  });
  if (!result.loaded) {
    logger.info("state", "crawl state of the --config file was loaded before: going on from where the crawl is now");
    return;
  }
  logger.info("state", "crawl state loaded from the --config file", { finished: result.finished, queued: result.queued, failed: result.failed });
}

function keyOf(url: string, scopes: SeedScope[]): string {
  try {
    return crawlKey(url, scopes.some((s) => s.allowHash));
  } catch {
    return url;
  }
}

/** browsertrix-crawler's recheck on load: a queued page the seeds' scope (as given now) leaves out is dropped. */
function inScope(page: QueuedPage, scopes: SeedScope[]): boolean {
  const scope = scopes[page.seedId];
  // A page of a redirect-added seed (or an unknown one) keeps its place: its scope is not known yet.
  if (!scope || page.depth === 0) return true;
  return scope.decide(page.url, page.depth - 1, Math.max(0, page.extraHops - 1)).inScope;
}

/**
 * --saveState: the crawl state written as browsertrix-crawler's YAML to <collection>/crawls/
 * `<timestamp>-<crawlId>.yaml` (the config, then `state:`): with `always` every --saveStateInterval
 * during the crawl and at its end, with `partial` at the end only if pages are left. The newest
 * --saveStateHistory files of this run are kept.
 */
export class StateFiles {
  private readonly written: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: CrawlOptions,
    private readonly session: JoinedCrawl,
    private readonly collectionDir: string,
  ) {}

  /** With `always`: save every interval while the pages are crawled. */
  start(): void {
    if (this.options.state.saveState !== "always") return;
    this.timer = setInterval(() => void this.save(), this.options.state.saveStateIntervalSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The page phase is over: stop saving periodically, and save once more if the mode asks for it. */
  async atEnd(): Promise<void> {
    this.stop();
    const mode = this.options.state.saveState;
    if (mode === "never") return;
    if (mode === "partial") {
      const counts = await this.session.state.counts();
      if (counts.queued === 0 && counts.pending === 0 && counts.done > 0) return;
    }
    await this.save();
  }

  private save(): Promise<void> {
    // One save at a time: a slow disk must not pile them up.
    this.saving = this.saving.then(() => this.write()).catch((err: unknown) => logger.error("state", `cannot save the crawl state: ${errorMessage(err)}`));
    return this.saving;
  }

  private async write(): Promise<void> {
    const { options, session } = this;
    const scopes = options.seeds.map((seed, i) => new SeedScope(seed, options.seedScopes[i]));
    const serialized = serializeCrawlState(session.state, session.redis, session.membership.keys, options.crawlId, (url) => keyOf(url, scopes));
    const { state, withheld } = withoutUrlPasswords(await withTimeout(serialized, SERIALIZE_DEADLINE_MS, "the crawl state could not be read from Redis in time"));
    const dir = join(this.collectionDir, "crawls");
    await mkdir(dir, { recursive: true });
    const stamp = timestampDigits(new Date());
    const file = join(dir, `${stamp}-${options.crawlId}.yaml`);
    // Its owner's only: it holds the crawl's URLs and settings (values holding secrets are left out of it).
    // Written beside and renamed over, in pieces: never seen cut short, never one string however large.
    await writeWholeFile(file, stateFileChunks(options.state.configToSave, state), { mode: 0o600 });
    const withheldKeys = (options.state.configToSave[WITHHELD_KEY] as WithheldSecrets | undefined)?.keys ?? [];
    logger.info("state", "crawl state saved", {
      file, finished: state.finished.length, queued: state.queued.length, pending: state.pending.length, failed: state.failed.length,
      // What it left out: settings holding secrets (named in the file), and the passwords of URLs (a seed's user:password@).
      ...(withheldKeys.length ? { settingsWithheld: withheldKeys } : {}),
      ...(withheld ? { urlPasswordsWithheld: withheld } : {}),
    });
    if (!this.written.includes(file)) this.written.push(file);
    while (this.written.length > options.state.saveStateHistory) {
      const old = this.written.shift()!;
      await unlink(old).catch((err: unknown) => logger.warn("state", `cannot remove an old state file: ${errorMessage(err)}`, { file: old }));
    }
  }
}
