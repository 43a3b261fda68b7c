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

/** Classify a page fetched in a refresh against its latest archived capture. */
export function classifyChange(
  previous: { digest: string } | null,
  status: number,
  digest: string | null,
): ChangeKind | null {
  if (!previous) return status >= 200 && status < 300 ? "new" : null;
  if (status === 304) return "unchanged";
  if (status === 404 || status === 410) return "gone";
  if (status >= 200 && status < 300) return digest === previous.digest ? "unchanged" : "changed";
  return null;
}
