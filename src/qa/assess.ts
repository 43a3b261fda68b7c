import { compareResources, screenshotMatch, textMatch, type LiveResource } from "./compare.js";
import type { QaPageResult } from "./pageResult.js";
import { archivedUrlOf } from "./replayTraffic.js";
import type { ReplayedPage } from "./replayTab.js";
import type { ListedPage } from "./waczPages.js";

/** What the crawl kept of a page's requests: the `urls` of its urn:pageinfo: record (browsertrix-crawler's format). */
function liveResources(pageInfo: string | null): Record<string, LiveResource> | null {
  if (!pageInfo) return null;
  try {
    const parsed = JSON.parse(pageInfo) as { urls?: unknown };
    return parsed.urls && typeof parsed.urls === "object" ? (parsed.urls as Record<string, LiveResource>) : null;
  } catch {
    return null;
  }
}

export interface Assessment {
  result: Omit<QaPageResult, "file" | "images">;
  /** Pixel differences, red on grey (pixelmatch's), when both screenshots were there. */
  diffImage: Buffer | null;
}

/**
 * Score one replayed page against what the crawl kept of it: screenshots, text, requests. A page whose own
 * document the replay could not show scores 0 throughout (as in browsertrix-crawler's QA: nothing replayed).
 */
export function assess(page: ListedPage, replayed: ReplayedPage, withDiff = false): Assessment {
  const frameUrl = replayed.frameUrl ? archivedUrlOf(replayed.frameUrl)?.url : undefined;
  const document = replayed.requests.find((r) => r.type === "Document" && r.url === frameUrl);
  const shown = replayed.frameUrl !== null && (document ? document.status > 0 && document.status < 400 : true);
  const resources = compareResources(replayed.requests, liveResources(replayed.livePageInfo));
  const missing = shown || resources.missing.includes(page.url) ? resources.missing : [page.url, ...resources.missing].sort();
  // A page captured without a browser has no rendered text to compare: its crawl text is its document's, and replay
  // runs its scripts. Its requests are still scored.
  const liveText = page.capturedStatically ? null : (page.text ?? replayed.liveText);
  const pixels = replayed.liveScreenshot && replayed.screenshot ? screenshotMatch(replayed.liveScreenshot, replayed.screenshot, withDiff) : null;
  const scores = shown
    ? { screenshot: pixels?.match ?? null, text: liveText === null ? null : textMatch(liveText, replayed.text), resources: resources.match }
    : { screenshot: replayed.liveScreenshot ? 0 : null, text: liveText === null ? null : 0, resources: 0 };
  const overall = Math.min(...[scores.screenshot, scores.text, scores.resources].filter((s): s is number => s !== null));
  return {
    result: {
      url: page.url,
      ts: page.ts ?? null,
      title: page.title ?? null,
      replayed: shown,
      scores: { ...scores, overall },
      resourceCounts: { crawlGood: resources.crawlGood, crawlBad: resources.crawlBad, replayGood: resources.replayGood, replayBad: resources.replayBad },
      missing,
      loadSeconds: Math.round(replayed.loadMs) / 1000,
    },
    diffImage: shown ? (pixels?.diff ?? null) : null,
  };
}
