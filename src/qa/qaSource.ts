import type { ArchiveResolver } from "../replay/replayServer.js";
import { resolveWaczSet, ReplaySourceError, type ResolveOptions } from "../replay/resolveSet.js";
import { setArchives } from "../replay/serveSet.js";
import { missingLine } from "../replay/waczSet.js";
import { listedPages, type ListedPage } from "./waczPages.js";

/** What --qaSource names, made ready to serve: the archives, the source ReplayWeb.page loads, the pages to check. */
export interface QaSource {
  /** The local archive files served as /archives/<name>. */
  archives: ArchiveResolver;
  /** Small files served from memory as /archives/<name> (the multi-WACZ JSON of the set). */
  inMemory: Record<string, { type: string; body: Buffer }>;
  /** What <replay-web-page source=...> loads: one WACZ, or a multi-WACZ JSON listing the whole set. */
  replaySource: string;
  /** The pages to check, in the order the archives list them: the source's own, not its dependencies'. */
  pages: ListedPage[];
  /** Delete what was downloaded. */
  dispose(): Promise<void>;
}

/** A source that cannot be read, or a WACZ it requires that was found nowhere with the right bytes: exit 4. */
export class QaSourceError extends Error {}

/**
 * Read --qaSource (a WACZ, a collection folder, a multi-WACZ JSON, or an http(s)/s3 URL of one) with every WACZ it
 * requires, as `replay` resolves it: a deduplicated crawl's revisits then replay from the crawls they point into.
 * Several WACZ files (a crawl that rolled over) are served together.
 */
export async function openQaSource(source: string | string[], places: ResolveOptions): Promise<QaSource> {
  let set;
  try {
    set = await resolveWaczSet(Array.isArray(source) ? source : [source], places);
  } catch (err) {
    if (err instanceof ReplaySourceError) throw new QaSourceError(err.message);
    throw err;
  }
  try {
    if (set.missing.length) throw new QaSourceError(set.missing.map(missingLine).join("; "));
    const own = set.members.filter((m) => m.isSource);
    const pages = onlyHtml((await Promise.all(own.map((member) => listedPages(member.path)))).flat());
    const { files, inMemory, sourcePath } = setArchives(set);
    const archives: ArchiveResolver = (name) => files.get(name) ?? null;
    // One WACZ with no dependencies is loaded as itself, as ReplayWeb.page users open it.
    const replaySource = set.members.length === 1 ? `/archives/${[...files.keys()][0]!.split("/").map(encodeURIComponent).join("/")}` : sourcePath;
    return { archives, inMemory, replaySource, pages, dispose: set.dispose };
  } catch (err) {
    await set.dispose();
    throw err;
  }
}

/** HTML pages only, each URL once (a page listed in two WACZ files is checked once). */
function onlyHtml(pages: ListedPage[]): ListedPage[] {
  const seen = new Set<string>();
  return pages.filter((page) => {
    if ((page.mime && !page.mime.startsWith("text/html")) || seen.has(page.url)) return false;
    seen.add(page.url);
    return true;
  });
}
