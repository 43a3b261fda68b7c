import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Cluster, Redis } from "ioredis";

export const CHANGE_KINDS = ["new", "changed", "unchanged", "gone", "skipped-fresh"] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** One line of reports/changes.jsonl. */
export interface ChangeEntry {
  url: string;
  change: ChangeKind;
  status: number | null;
  digest: string | null;
  previous: { crawlId: string; date: string; digest: string } | null;
}

/** Pages per kind; the URLs themselves are only in the report file (a crawl may have millions). */
export type ChangeSummary = Record<ChangeKind, number>;

// A page reported again (retried, or a resumed crawl) counts once, by its latest kind.
const COUNT_LUA = `
local previous = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if previous then redis.call('HINCRBY', KEYS[2], previous, -1) end
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
`;

/**
 * What a re-crawl found changed, page by page, appended to the report file as it goes (a resumed crawl
 * keeps its lines). Counts are kept in the crawl-state Redis, so memory stays flat however many pages.
 */
export class ChangeReport {
  constructor(
    readonly path: string,
    private readonly redis: Redis | Cluster,
    private readonly keys: { kinds: string; counts: string },
  ) {}

  async add(entry: ChangeEntry): Promise<void> {
    mkdirSync(dirname(this.path), { recursive: true });
    appendFileSync(this.path, JSON.stringify(entry) + "\n");
    await this.redis.eval(COUNT_LUA, 2, this.keys.kinds, this.keys.counts, entry.url, entry.change);
  }

  /** Pages per kind, each page by its latest line. */
  async summary(): Promise<ChangeSummary> {
    const raw = await this.redis.hgetall(this.keys.counts);
    return Object.fromEntries(CHANGE_KINDS.map((kind) => [kind, Number(raw[kind] ?? 0)])) as ChangeSummary;
  }
}

/** What a capture of a page URL says about it: its own status (a redirect's, not its target's). */
export interface CaptureFacts {
  status: number;
  /** Payload digest; null when this crawl's capture is not known (the history could not record it). */
  digest: string | null;
  location?: string;
}

const isGone = (status: number) => status === 404 || status === 410;
const isRedirect = (status: number) => status >= 300 && status < 400 && status !== 304;
/** A 304-confirmed capture stands for the 2xx response it confirmed. */
const isContent = (status: number) => (status >= 200 && status < 300) || status === 304;

/** Classify a page fetched in a refresh (its capture now) against its latest archived capture. */
export function classifyChange(previous: CaptureFacts | null, current: CaptureFacts): ChangeKind | null {
  if (!previous) return isContent(current.status) || isRedirect(current.status) ? "new" : null;
  if (current.status === 304) return "unchanged";
  if (isGone(current.status)) return isGone(previous.status) ? "unchanged" : "gone";
  if (isRedirect(current.status)) return previous.status === current.status && previous.location === current.location ? "unchanged" : "changed";
  if (isContent(current.status)) return isContent(previous.status) && current.digest === previous.digest ? "unchanged" : "changed";
  return previous.status === current.status && current.digest === previous.digest ? "unchanged" : "changed";
}
