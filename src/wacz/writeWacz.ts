// Package finished WARC files into a WACZ 1.1.1 file.
//
// Layout: archive/<warc basename>, indexes/index.cdxj (or index.cdx.gz + index.idx),
// pages/pages.jsonl, optional pages/extraPages.jsonl, caller's extra entries, then
// datapackage.json and datapackage-digest.json. Every entry is stored uncompressed.
// The zip is written to `<outputPath>.tmp-<pid>` and renamed, so a crash never leaves
// a half-written WACZ under the final name; scratch index files live in a private
// temp dir so concurrent packagers never collide.
import { mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

import { iterCdxjLines } from "./cdxj.js";
import { sortLinesExternally } from "./externalSort.js";
import {
  DATAPACKAGE_DIGEST_PATH,
  DATAPACKAGE_PATH,
  buildDataPackage,
  buildDataPackageDigest,
  makeResource,
  serializeDataPackage,
  serializeDataPackageDigest,
  type RelationRequirement,
} from "./datapackage.js";
import {
  EXTRA_PAGES_HEADER_LINE,
  PAGES_HEADER_LINE,
  copyWithHeader,
  inspectPagesFile,
  writeHeaderOnlyPages,
} from "./pages.js";
import { writeStoredZip, type ZipFileEntry } from "./storedZip.js";
import { DEFAULT_ZIPNUM_THRESHOLD_BYTES, writeCdxIndexes } from "./zipnum.js";

export interface WaczInput {
  /** final .wacz path */
  outputPath: string;
  /** Awaited before the finished zip replaces outputPath; throwing leaves outputPath untouched. */
  beforeRename?: () => Promise<void>;
  /** stored as archive/<basename>; basenames must be unique */
  warcFiles: string[];
  /** pages.jsonl (seeds) -> pages/pages.jsonl; a header-only file is written when absent */
  pagesFile?: string;
  /** -> pages/extraPages.jsonl when it has at least one page line */
  extraPagesFile?: string;
  /** e.g. reports/changes.jsonl, logs */
  extraEntries?: { zipPath: string; sourcePath: string }[];
  software: string;
  title?: string;
  description?: string;
  /** defaults to the first page of pages.jsonl */
  mainPageUrl?: string;
  /** defaults to the first page's ts */
  mainPageDate?: string;
  requires?: RelationRequirement[];
  /** CDXJ size at or above which a ZipNum index is written; default 50_000 */
  zipNumThresholdBytes?: number;
  /** Where scratch files go (index files, sorted runs of CDXJ lines); default the system temp dir. */
  tmpDir?: string;
  /** CDXJ bytes sorted in memory before a run is spilled to disk (default 16 MiB). */
  sortRunBytes?: number;
  /**
   * Signs the datapackage: given its digest and `created`, returns what goes into datapackage-digest.json as
   * `signedData` (null: unsigned). Called once per WACZ, after every entry is hashed.
   */
  sign?: (req: { hash: string; created: string }) => Promise<unknown>;
}

export interface WaczResult {
  path: string;
  filename: string;
  /** sha256:<hex> of the whole .wacz */
  hash: string;
  size: number;
  cdxLines: number;
}

const RESERVED_ZIP_PATHS = new Set([DATAPACKAGE_PATH, DATAPACKAGE_DIGEST_PATH]);

function checkZipPath(zipPath: string): void {
  const bad =
    zipPath === "" ||
    zipPath.startsWith("/") ||
    zipPath.includes("\\") ||
    zipPath.split("/").some((seg) => seg === "" || seg === "." || seg === "..");
  if (bad) throw new Error(`invalid zip path: ${JSON.stringify(zipPath)}`);
  if (RESERVED_ZIP_PATHS.has(zipPath)) throw new Error(`zip path is reserved: ${zipPath}`);
}

function warcEntries(warcFiles: readonly string[]): ZipFileEntry[] {
  // The CDXJ `filename` is the basename, so two WARCs with one basename would be ambiguous.
  const seen = new Set<string>();
  return warcFiles.map((sourcePath) => {
    const name = basename(sourcePath);
    if (seen.has(name)) throw new Error(`duplicate WARC basename: ${name}`);
    seen.add(name);
    return { zipPath: `archive/${name}`, sourcePath };
  });
}

/** Use the pages file as is when it has a header; otherwise a headed copy in workDir. */
async function pagesEntry(
  sourcePath: string,
  zipPath: string,
  headerLine: string,
  hasHeader: boolean,
  workDir: string,
): Promise<ZipFileEntry> {
  if (hasHeader) return { zipPath, sourcePath };
  const copy = join(workDir, basename(zipPath));
  await copyWithHeader(sourcePath, copy, headerLine);
  return { zipPath, sourcePath: copy };
}

export async function writeWacz(input: WaczInput): Promise<WaczResult> {
  if (input.warcFiles.length === 0) throw new Error("writeWacz: no WARC files given");
  const warcs = warcEntries(input.warcFiles);

  const tmpOutput = `${input.outputPath}.tmp-${process.pid}`;
  const workDir = await mkdtemp(join(input.tmpDir ?? tmpdir(), "wacz-"));
  try {
    // Sorted with bounded memory: runs spilled under workDir, merged while the index is written.
    const cdxLines = await sortLinesExternally(iterCdxjLines(input.warcFiles), { tmpDir: workDir, runBytes: input.sortRunBytes });
    const indexes = await writeCdxIndexes(cdxLines, workDir, {
      thresholdBytes: input.zipNumThresholdBytes ?? DEFAULT_ZIPNUM_THRESHOLD_BYTES,
    });

    // pages/pages.jsonl is a MUST, even when the crawl recorded no pages.
    let pages: ZipFileEntry;
    let mainPageUrl = input.mainPageUrl;
    let mainPageDate = input.mainPageDate;
    if (input.pagesFile) {
      const info = await inspectPagesFile(input.pagesFile);
      pages = await pagesEntry(input.pagesFile, "pages/pages.jsonl", PAGES_HEADER_LINE, info.hasHeader, workDir);
      if (mainPageUrl === undefined && info.firstPage) {
        mainPageUrl = info.firstPage.url;
        if (mainPageDate === undefined) mainPageDate = info.firstPage.ts;
      }
    } else {
      const path = join(workDir, "pages.jsonl");
      await writeHeaderOnlyPages(path);
      pages = { zipPath: "pages/pages.jsonl", sourcePath: path };
    }

    const files: ZipFileEntry[] = [...warcs, ...indexes, pages];
    if (input.extraPagesFile) {
      const info = await inspectPagesFile(input.extraPagesFile);
      if (info.hasPages) {
        files.push(
          await pagesEntry(input.extraPagesFile, "pages/extraPages.jsonl", EXTRA_PAGES_HEADER_LINE, info.hasHeader, workDir),
        );
      }
    }
    files.push(...(input.extraEntries ?? []).map((e) => ({ zipPath: e.zipPath, sourcePath: e.sourcePath })));

    const seen = new Set<string>();
    for (const f of files) {
      checkZipPath(f.zipPath);
      if (seen.has(f.zipPath)) throw new Error(`duplicate zip path: ${f.zipPath}`);
      seen.add(f.zipPath);
    }

    const zip = await writeStoredZip(tmpOutput, files, async (entries) => {
      const created = new Date();
      const datapackage = serializeDataPackage(
        buildDataPackage({
          created,
          resources: entries.map((e) => makeResource(e.zipPath, e.sha256, e.bytes)),
          software: input.software,
          title: input.title,
          description: input.description,
          mainPageUrl,
          mainPageDate,
          requires: input.requires,
        }),
      );
      const unsigned = buildDataPackageDigest(datapackage);
      const signedData = await input.sign?.({ hash: unsigned.hash, created: created.toISOString() });
      const digest = serializeDataPackageDigest(buildDataPackageDigest(datapackage, signedData));
      return [
        { zipPath: DATAPACKAGE_PATH, data: datapackage },
        { zipPath: DATAPACKAGE_DIGEST_PATH, data: digest },
      ];
    });

    await input.beforeRename?.();
    await rename(tmpOutput, input.outputPath);
    return {
      path: input.outputPath,
      filename: basename(input.outputPath),
      hash: `sha256:${zip.sha256}`,
      size: zip.size,
      cdxLines: cdxLines.count,
    };
  } catch (err) {
    await rm(tmpOutput, { force: true });
    throw err;
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
