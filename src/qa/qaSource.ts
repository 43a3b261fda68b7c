import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ArchiveResolver } from "../replay/replayServer.js";
import { listedPages, pagesOfList, type ListedPage } from "./waczPages.js";

/** What --qaSource names, made ready to serve: the archives, the source ReplayWeb.page loads, the pages to check. */
export interface QaSource {
  /** The local archive files served as /archives/<name>. */
  archives: ArchiveResolver;
  /** What <replay-web-page source=...> loads: one WACZ, or a multi-WACZ JSON listing them all. */
  replaySource: string;
  /** The pages to check, in the order the archives list them. */
  pages: ListedPage[];
  /** Delete what was downloaded. */
  dispose(): Promise<void>;
}

export class QaSourceError extends Error {}

interface MultiWaczJson {
  resources?: { path?: string; name?: string; fromDependency?: boolean }[];
  pages?: ListedPage[];
}

const isUrl = (s: string): boolean => /^https?:\/\//i.test(s);
const pathOf = (s: string): string => (isUrl(s) ? new URL(s).pathname : s);

/**
 * Read --qaSource: a WACZ file, a multi-WACZ JSON (browsertrix's format: `resources` with paths relative to
 * it, and optionally `pages`), or an http(s) URL of either (downloaded first: ReplayWeb.page and the page
 * lists then read local files). Several WACZ files (a crawl that rolled over) are served together.
 */
export async function openQaSource(source: string | string[]): Promise<QaSource> {
  const temp = await mkdtemp(join(tmpdir(), "qa-source-"));
  const dispose = () => rm(temp, { recursive: true, force: true });
  try {
    const { waczFiles, pages } = await collect(Array.isArray(source) ? source : [source], temp);
    if (!waczFiles.length) throw new QaSourceError(`no WACZ file in --qaSource ${String(source)}`);
    const served = new Map(waczFiles.map((path, i) => [`${i}-${basename(path)}`, path]));
    const listed = pages ?? (await Promise.all(waczFiles.map((path) => listedPages(path)))).flat();
    let replaySource = `/archives/${[...served.keys()][0]}`;
    if (served.size > 1) {
      const json = JSON.stringify({ profile: "multi-wacz-package", resources: [...served.keys()].map((name) => ({ name, path: name })) });
      const jsonName = "qa-source.json";
      await writeFile(join(temp, jsonName), json);
      served.set(jsonName, join(temp, jsonName));
      replaySource = `/archives/${jsonName}`;
    }
    return { archives: (name) => served.get(name) ?? null, replaySource, pages: onlyHtml(listed), dispose };
  } catch (err) {
    await dispose();
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

async function collect(sources: string[], temp: string): Promise<{ waczFiles: string[]; pages: ListedPage[] | null }> {
  const waczFiles: string[] = [];
  let pages: ListedPage[] | null = null;
  for (const source of sources) {
    const name = pathOf(source);
    if (name.endsWith(".wacz")) {
      waczFiles.push(await local(source, temp));
    } else if (name.endsWith(".json")) {
      const jsonPath = await local(source, temp);
      const json = JSON.parse(await readFile(jsonPath, "utf8")) as MultiWaczJson;
      if (Array.isArray(json.pages)) pages = [...(pages ?? []), ...pagesOfList(json.pages.map((p) => JSON.stringify(p)).join("\n"))];
      for (const entry of json.resources ?? []) {
        if (entry.fromDependency || !entry.path) continue;
        // Paths are relative to the JSON, which may itself be a URL.
        const target = isUrl(entry.path) ? entry.path : isUrl(source) ? new URL(entry.path, source).href : isAbsolute(entry.path) ? entry.path : resolve(dirname(jsonPath), entry.path);
        waczFiles.push(await local(target, temp));
      }
    } else {
      throw new QaSourceError(`--qaSource takes a .wacz file, a multi-WACZ .json or a URL of one; got ${source}`);
    }
  }
  return { waczFiles, pages };
}

let downloads = 0;

/** A local path for a source: itself, or its download into `temp`. */
async function local(source: string, temp: string): Promise<string> {
  if (!isUrl(source)) return resolve(source);
  const response = await fetch(source);
  if (!response.ok || !response.body) throw new QaSourceError(`cannot download ${source}: HTTP ${response.status}`);
  const path = join(temp, `${downloads++}-${basename(new URL(source).pathname) || "source"}`);
  await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream<Uint8Array>), createWriteStream(path));
  return path;
}
