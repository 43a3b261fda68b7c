import { distance } from "fastest-levenshtein";
import pixelmatch from "pixelmatch";
import { PNG } from "pngjs";
import type { ReplayRequest } from "./replayTraffic.js";

/** Share of pixels that match, over the larger of the two images' sizes (the part only one has counts as different). */
export function screenshotMatch(live: Buffer, replay: Buffer, withDiff = false): { match: number; diff: Buffer | null } {
  const a = PNG.sync.read(live);
  const b = PNG.sync.read(replay);
  const width = Math.min(a.width, b.width);
  const height = Math.min(a.height, b.height);
  const crop = (img: PNG): Buffer => {
    if (img.width === width && img.height === height) return img.data;
    const out = new PNG({ width, height });
    PNG.bitblt(img, out, 0, 0, width, height, 0, 0);
    return out.data;
  };
  const diff = withDiff ? new PNG({ width, height }) : null;
  // browsertrix-crawler's QA settings: per-pixel colour threshold 0.1 (pale colours close to each other match).
  const differing = pixelmatch(crop(a), crop(b), diff?.data, width, height, { threshold: 0.1 });
  const total = Math.max(a.width, b.width) * Math.max(a.height, b.height);
  return { match: total ? (width * height - differing) / total : 1, diff: diff ? PNG.sync.write(diff) : null };
}

/** Texts compared past this many characters are cut there (the distance is quadratic in the length). */
export const TEXT_COMPARE_LIMIT = 50_000;

/** 1 - Levenshtein distance / longer length, as browsertrix-crawler's QA scores text; two empty texts match. */
export function textMatch(live: string, replay: string): number {
  const a = live.slice(0, TEXT_COMPARE_LIMIT);
  const b = replay.slice(0, TEXT_COMPARE_LIMIT);
  const longer = Math.max(a.length, b.length);
  return longer === 0 ? 1 : (longer - distance(a, b)) / longer;
}

/** A URL the page requested live, with the crawl's answer (a urn:pageinfo: record's `urls`). */
export interface LiveResource {
  status: number;
  mime?: string;
  type?: string;
}

export interface ResourceComparison {
  /** Requests the crawl saw answered below 400 / 400 and above (null: the crawl kept no record of them). */
  crawlGood: number | null;
  crawlBad: number | null;
  /** Requests the replay answered below 400 / from 400, or not at all. */
  replayGood: number;
  replayBad: number;
  /**
   * What the replayed page asked for and the archive could not give: answered 404 or not at all, unless
   * the crawl saw that URL fail the same way live. Sorted.
   */
  missing: string[];
  /** Share of the replayed page's requests the archive answered. */
  match: number;
}

const isBad = (status: number) => status === 0 || status >= 400;

export function compareResources(replayed: readonly ReplayRequest[], live: Record<string, LiveResource> | null): ResourceComparison {
  const liveEntries = live ? Object.entries(live).filter(([url]) => /^https?:/.test(url)) : null;
  const replayBad = replayed.filter((r) => isBad(r.status)).length;
  const missing = replayed
    .filter((r) => isBad(r.status))
    .filter((r) => !(live?.[r.url] && isBad(live[r.url].status)))
    .map((r) => r.url)
    .sort();
  const counted = replayed.length - (replayBad - missing.length);
  return {
    crawlGood: liveEntries ? liveEntries.filter(([, r]) => !isBad(r.status)).length : null,
    crawlBad: liveEntries ? liveEntries.filter(([, r]) => isBad(r.status)).length : null,
    replayGood: replayed.length - replayBad,
    replayBad,
    missing,
    match: counted ? (counted - missing.length) / counted : 1,
  };
}
