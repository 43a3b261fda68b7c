import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";

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

export type ChangeSummary = Record<ChangeKind, { count: number; urls: string[] }>;

/** What a re-crawl found changed, page by page, appended as it goes (a resumed crawl keeps its lines). */
export class ChangeReport {
  constructor(readonly path: string) {}

  add(entry: ChangeEntry): void {
    mkdirSync(dirname(this.path), { recursive: true });
    appendFileSync(this.path, JSON.stringify(entry) + "\n");
  }

  /** Counts and URLs per kind; a page reported twice (retried) counts once, by its last line. */
  summary(): ChangeSummary {
    const latest = new Map<string, ChangeKind>();
    if (existsSync(this.path)) {
      for (const line of readFileSync(this.path, "utf8").split("\n")) {
        if (line) latest.set((JSON.parse(line) as ChangeEntry).url, (JSON.parse(line) as ChangeEntry).change);
      }
    }
    const summary = Object.fromEntries(CHANGE_KINDS.map((k) => [k, { count: 0, urls: [] as string[] }])) as ChangeSummary;
    for (const [url, kind] of latest) {
      summary[kind].count += 1;
      summary[kind].urls.push(url);
    }
    for (const kind of CHANGE_KINDS) summary[kind].urls.sort();
    return summary;
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
