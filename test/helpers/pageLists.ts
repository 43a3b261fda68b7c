import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** One line of pages.jsonl / extraPages.jsonl (the fields tests read). */
export interface ListedPage {
  url: string;
  status?: number;
  title?: string;
  ts?: string;
  [field: string]: unknown;
}

/** The pages a collection lists, seeds (pages.jsonl) then the rest (extraPages.jsonl); a missing file lists none. */
export function listedPages(collectionDir: string): ListedPage[] {
  return ["pages.jsonl", "extraPages.jsonl"]
    .map((f) => join(collectionDir, "pages", f))
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, "utf8").trim().split("\n").slice(1).filter(Boolean))
    .map((line) => JSON.parse(line) as ListedPage);
}

/** The listed pages' URL paths (with `part` of each URL: path by default), sorted. */
export function listedPaths(collectionDir: string, part: (url: URL) => string = (u) => u.pathname): string[] {
  return listedPages(collectionDir).map((p) => part(new URL(p.url))).sort();
}
