import { join } from "node:path";
import type { RawCrawlFlags } from "../config/crawlOptions.js";
import type { OutputOptions } from "../config/groups/outputOptions.js";
import type { AddressPolicy } from "../fetch/addressPolicy.js";
import type { ResolveOptions } from "../replay/resolveSet.js";
import { errorMessage, logger } from "../log/logger.js";
import type { QaSummary } from "./pageResult.js";

/**
 * `crawl --qa` needs what QA compares with: a WACZ, each page's viewport screenshot (urn:view:) and text
 * (urn:text:). Added to what the flags ask for (nothing asked for is taken away). A hybrid crawl
 * (--captureMode hybrid) takes no screenshots, since most of its pages are never rendered: its pages are scored
 * on their text and requests.
 */
export function withQaNeeds(flags: RawCrawlFlags): RawCrawlFlags {
  if (!flags.qa) return flags;
  const text = (flags.text ?? []).filter((t) => t !== "false");
  const screenshot = flags.screenshot ?? [];
  return {
    ...flags,
    generateWACZ: true,
    text: text.some((t) => t.split(",").includes("to-warc")) ? text : [...text, "to-warc"],
    screenshot: flags.captureMode === "hybrid" || screenshot.some((s) => s.split(",").includes("view")) ? screenshot : [...screenshot, "view"],
  };
}

export interface CrawlQaSettings {
  qa: NonNullable<OutputOptions["qa"]>;
  collectionDir: string;
  executablePath: string;
  pageLoadTimeoutSeconds: number;
  /** The crawl's address policy: the replay's WebSockets obey it too. */
  addresses: AddressPolicy;
  /** Where the WACZ files the crawl's revisits point into are looked for. */
  places: ResolveOptions;
}

/**
 * `crawl --qa`, once the crawl has ended: replay its WACZ files and score each page, then list the pages
 * below the threshold in the log. Never fails the crawl: QA reports on the archive, it does not change it.
 */
export async function checkCrawl(waczPaths: string[], settings: CrawlQaSettings): Promise<QaSummary | null> {
  if (!waczPaths.length) {
    logger.warn("qa", "--qa: no WACZ was written by this crawl process, nothing to check");
    return null;
  }
  try {
    // Loaded only when a crawl asks for its QA (its image and text comparisons are not a crawl's start-up cost).
    const { runQa } = await import("./qaRun.js");
    const summary = await runQa({
      source: waczPaths,
      outputDir: settings.collectionDir,
      pageLimit: 0,
      include: [],
      exclude: [],
      threshold: settings.qa.threshold,
      executablePath: settings.executablePath,
      pageTimeoutMs: Math.min(settings.pageLoadTimeoutSeconds, 60) * 1000,
      quietMs: 500,
      postLoadDelayMs: 0,
      debugImageDiff: settings.qa.debugImageDiff,
      addresses: settings.addresses,
      places: settings.places,
    });
    const report = join(settings.collectionDir, "qa", "index.html");
    if (summary.below.length) {
      logger.warn("qa", `${summary.below.length} of ${summary.pages} pages replay below the QA threshold ${settings.qa.threshold}`, { threshold: settings.qa.threshold, report, pages: summary.below });
    } else {
      logger.info("qa", `all ${summary.pages} pages replay at or above the QA threshold ${settings.qa.threshold}`, { threshold: settings.qa.threshold, report });
    }
    return summary;
  } catch (err) {
    logger.error("qa", `QA could not run: ${errorMessage(err)}`);
    return null;
  }
}
