import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { errorMessage, logger } from "../log/logger.js";
import { assess } from "./assess.js";
import { htmlReport } from "./htmlReport.js";
import { pageFileName, worstFirst, type QaPageResult, type QaSummary } from "./pageResult.js";
import { openQaSource } from "./qaSource.js";
import { loadReplayAssets } from "../replay/replayAssets.js";
import { startReplayServer } from "../replay/replayServer.js";
import type { ResolveOptions } from "../replay/resolveSet.js";
import { AddressPolicy } from "../fetch/addressPolicy.js";
import { ReplayTab, type ReplayedPage } from "./replayTab.js";
import type { ListedPage } from "./waczPages.js";

export interface QaOptions {
  /** --qaSource: a WACZ, a multi-WACZ JSON or a URL of one; or the WACZ files of a crawl. */
  source: string | string[];
  /** Where qa.json and qa/ go (the collection folder). */
  outputDir: string;
  /** Check at most this many pages; 0 = all. */
  pageLimit: number;
  include: RegExp[];
  exclude: RegExp[];
  /** Pages scoring below this are listed as failing QA. */
  threshold: number;
  executablePath: string;
  pageTimeoutMs: number;
  quietMs: number;
  postLoadDelayMs: number;
  /** --qaDebugImageDiff: also write each page's pixel difference image. */
  debugImageDiff: boolean;
  /** What the replay's WebSockets may connect to: after a crawl (--qa) the crawl's policy; absent, the policy outside a crawl. */
  addresses?: AddressPolicy;
  /** Where the WACZ files the source requires are looked for (as `replay` looks). */
  places: ResolveOptions;
}

export { DEFAULT_QA_THRESHOLD } from "../config/groups/outputOptions.js";

/** The pages to check: as listed, in --include (if given) and not --exclude'd, up to the limit. */
export function pagesToCheck(pages: readonly ListedPage[], options: Pick<QaOptions, "include" | "exclude" | "pageLimit">): ListedPage[] {
  const chosen = pages.filter((p) => (!options.include.length || options.include.some((rx) => rx.test(p.url))) && !options.exclude.some((rx) => rx.test(p.url)));
  return options.pageLimit > 0 ? chosen.slice(0, options.pageLimit) : chosen;
}

/** A page the replay could not even open (the tab's navigation failed): nothing replayed. */
const unopened = (loadMs: number): ReplayedPage => ({ frameUrl: null, screenshot: null, text: "", requests: [], liveScreenshot: null, liveText: null, livePageInfo: null, loadMs });

/**
 * Replay every page of the source in ReplayWeb.page and compare it with what the crawl kept: writes
 * qa/<page>.json (and its images), qa.json and qa/index.html under outputDir.
 */
export async function runQa(options: QaOptions): Promise<QaSummary> {
  const started = Date.now();
  const assets = await loadReplayAssets();
  const source = await openQaSource(options.source, options.places);
  const qaDir = join(options.outputDir, "qa");
  mkdirSync(qaDir, { recursive: true });
  const results: QaPageResult[] = [];
  try {
    const pages = pagesToCheck(source.pages, options);
    logger.info("qa", "QA started", { source: options.source, pages: pages.length, replayWeb: assets.dir });
    const server = await startReplayServer(assets, source.archives, { inMemory: source.inMemory });
    try {
      const tab = await ReplayTab.open(server, { ...options, addresses: options.addresses ?? AddressPolicy.outsideACrawl() });
      try {
        for (const page of pages) results.push(await checkPage(tab, source.replaySource, page, qaDir, options));
      } finally {
        await tab.close();
      }
    } finally {
      await server.close();
    }
  } finally {
    await source.dispose();
  }
  const seconds = (Date.now() - started) / 1000;
  const ordered = worstFirst(results);
  const summary: QaSummary = {
    source: Array.isArray(options.source) ? options.source.join(" ") : options.source,
    threshold: options.threshold,
    pages: results.length,
    below: ordered.filter((r) => r.scores.overall < options.threshold).map((r) => ({ url: r.url, overall: r.scores.overall, file: r.file })),
    seconds: Math.round(seconds * 10) / 10,
    secondsPerPage: results.length ? Math.round((seconds / results.length) * 100) / 100 : 0,
    results: ordered.map((r) => ({ url: r.url, file: r.file, scores: r.scores, missing: r.missing.length })),
  };
  writeFileSync(join(options.outputDir, "qa.json"), JSON.stringify(summary, null, 2) + "\n");
  writeFileSync(join(qaDir, "index.html"), htmlReport(summary, results));
  logger.info("qa", "QA finished", { pages: summary.pages, below: summary.below.length, seconds: summary.seconds, secondsPerPage: summary.secondsPerPage, report: join(qaDir, "index.html") });
  return summary;
}

async function checkPage(tab: ReplayTab, replaySource: string, page: ListedPage, qaDir: string, options: QaOptions): Promise<QaPageResult> {
  const started = Date.now();
  const replayed = await tab.replay(replaySource, page).catch((err: unknown) => {
    logger.warn("qa", "page could not be replayed", { url: page.url, error: errorMessage(err) });
    return unopened(Date.now() - started);
  });
  const { result, diffImage } = assess(page, replayed, options.debugImageDiff);
  const file = pageFileName(page.url);
  const write = (suffix: string, bytes: Buffer | null): string | null => {
    if (!bytes) return null;
    writeFileSync(join(qaDir, `${file}${suffix}`), bytes);
    return `${file}${suffix}`;
  };
  const images = {
    live: write(".live.png", replayed.liveScreenshot),
    replay: write(".replay.png", replayed.screenshot),
    diff: options.debugImageDiff ? write(".diff.png", diffImage) : null,
  };
  const full: QaPageResult = { ...result, file, images };
  writeFileSync(join(qaDir, `${file}.json`), JSON.stringify(full, null, 2) + "\n");
  logger.info("qa", "page checked", { url: page.url, ...full.scores, missing: full.missing.length, loadSeconds: full.loadSeconds });
  return full;
}
