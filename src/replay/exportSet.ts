// A resolved set written out as one file: a WACZ holding the whole set, which ReplayWeb.page opens alone (FILE.wacz),
// or a multi-WACZ JSON manifest pointing at the set's WACZ files where they are (FILE.json).
//
// Why one merged WACZ rather than a zip of the WACZ files (Browsertrix's multi-wacz-package): ReplayWeb.page names
// the WACZ files inside such a package "<package>#!/<name>", while a revisit names its original's WACZ by the plain
// name (WARC-Refers-To-Container, relation.requires). No WACZ of the package answers to that name, so a revisit finds
// its original only if the original's index lines happen to be loaded already: not when the original sits in a
// ZipNum index block away from the URLs looked up so far, nor when a page is a revisit and the WACZ holding it is
// searched before the one holding its original. In one WACZ with a plain CDXJ index, the first lookup loads every
// line, so a revisit's original is found whichever WACZ its header names.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, realpath, rm, stat } from "node:fs/promises";
import { basename, dirname, join, posix, resolve } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { pathToFileURL } from "node:url";
import { syncDirectory } from "../durable/syncDirectory.js";
import { writeWholeFile } from "../durable/wholeFile.js";
import { SOFTWARE } from "../version.js";
import { EXTRA_PAGES_HEADER_LINE, PAGES_HEADER_LINE, sha256Hex, writeWacz } from "../wacz/index.js";
import { serializeManifest } from "../wacz/manifest.js";
import { openWacz, WaczReadError } from "../wacz/reader/index.js";
import { describeWacz, missingLine, type SetMember, type WaczSet } from "./waczSet.js";

/** A set that cannot be exported to the target asked for: one line for the user. */
export class ExportError extends Error {}

/** `wacz`: FILE.wacz holding the whole set; `manifest`: FILE.json listing where the set's WACZ files are. */
export type ExportFormat = "wacz" | "manifest";

export interface ExportedSet {
  /** The file written, absolute. */
  path: string;
  format: ExportFormat;
  /** sha256:<hex> of the file written. */
  hash: string;
  size: number;
  /** The set's WACZ files it holds or lists, dependencies first. */
  members: { name: string; hash: string; size: number }[];
}

/** The export a target's name asks for: FILE.wacz one WACZ, FILE.json a manifest. */
export function exportFormatOf(target: string): ExportFormat {
  if (/\.wacz$/i.test(target)) return "wacz";
  if (/\.json$/i.test(target)) return "manifest";
  throw new ExportError(`${target}: an export is a .wacz or a .json file`);
}

/** Write the set to `target` in the format its name asks for. Only a whole set is exported: a missing WACZ refuses it. */
export async function exportWaczSet(set: WaczSet, target: string): Promise<ExportedSet> {
  return exportFormatOf(target) === "wacz" ? writeSetWacz(set, target) : writeSetManifest(set, target);
}

/**
 * Write the set as one WACZ: every WARC file of every member, byte for byte, one plain CDXJ index over them all (read
 * whole at the first lookup: see the top of this file), the members' pages (the sources' first, so that the main page
 * is theirs) and no relation.requires: it needs nothing else. What else the members hold (logs, reports, a signature)
 * is not carried over. A set of one is such a WACZ already and is copied as it is. Written beside `target` under a temporary name, synced and renamed over it, so an existing target is replaced
 * only by a whole WACZ.
 */
export async function writeSetWacz(set: WaczSet, target: string): Promise<ExportedSet> {
  const path = resolve(target);
  await checkExportable(set, path);
  const members = set.members.map(memberFacts);
  if (set.members.length === 1) {
    const only = set.members[0]!;
    await writeWholeFile(path, checkedBytes(only));
    return { path, format: "wacz", hash: only.hash, size: only.size, members };
  }
  // The members' WARC files are copied out next to the target: that disk has room for them, /tmp may not.
  const work = await mkdtemp(join(dirname(path), `.${basename(path)}.`));
  try {
    const unpacked = await unpackMembers(set.members, work);
    const written = await writeWacz({
      outputPath: path,
      warcFiles: unpacked.warcFiles,
      pagesFile: unpacked.pagesFile,
      extraPagesFile: unpacked.extraPagesFile,
      software: SOFTWARE,
      description: `The WACZ files ${set.members.map(describeWacz).join(", ")}, in one`,
      zipNumThresholdBytes: Number.POSITIVE_INFINITY,
      tmpDir: work,
    });
    await syncDirectory(dirname(path));
    return { path, format: "wacz", hash: written.hash, size: written.size, members };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A member's bytes as read now, failing at the end (before anything is renamed) when they are not the ones checked. */
async function* checkedBytes(member: SetMember): AsyncGenerator<Uint8Array> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(member.path)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
    yield chunk as Buffer;
  }
  const now = `sha256:${hash.digest("hex")}`;
  if (now !== member.hash || size !== member.size) throw new ExportError(`${member.where} changed since it was checked: ${size} bytes, ${now}, not ${member.size} bytes, ${member.hash}`);
}

/**
 * Write the set as a multi-WACZ JSON manifest (what `indexer --sourceUrl`, `replay` and ReplayWeb.page read): each
 * member where it was found, as a path relative to the manifest when it is a file of this machine, else its URL,
 * dependencies marked fromDependency. A member found only in the S3 store has no address these readers open, so it
 * refuses the export.
 */
export async function writeSetManifest(set: WaczSet, target: string): Promise<ExportedSet> {
  const path = resolve(target);
  await checkExportable(set, path);
  const listed = set.members.map((member) => ({
    name: member.name,
    location: lastingLocation(member),
    hash: member.hash,
    size: member.size,
    crawlId: member.crawlId,
    // Read back by `replay`: a dependency listed is resolved first, and its pages are not the set's own.
    fromDependency: !member.isSource,
  }));
  const text = serializeManifest(listed, pathToFileURL(path));
  await writeWholeFile(path, text);
  return {
    path,
    format: "manifest",
    hash: `sha256:${sha256Hex(text)}`,
    size: Buffer.byteLength(text),
    members: set.members.map(memberFacts),
  };
}

const memberFacts = (member: SetMember): ExportedSet["members"][number] => ({ name: member.name, hash: member.hash, size: member.size });

/** Where a member stays once the set's downloads are gone: its file, or the http(s) URL it was downloaded from. */
function lastingLocation(member: SetMember): URL {
  if (/^https?:\/\//i.test(member.where)) return new URL(member.where);
  if (/^s3:\/\//i.test(member.where)) {
    throw new ExportError(`${member.name} is in the S3 store (${member.where}), which a JSON manifest cannot point to: export a .wacz instead`);
  }
  return pathToFileURL(resolve(member.where));
}

/** Refuse what cannot make a whole export: a missing member, no member at all, an export written over a member. */
async function checkExportable(set: WaczSet, target: string): Promise<void> {
  if (set.missing.length) throw new ExportError(`the set is not whole, so it is not exported: ${set.missing.map(missingLine).join("; ")}`);
  if (!set.members.length) throw new ExportError("the set has no WACZ file to export");
  const folder = await stat(dirname(target)).catch(() => null);
  if (!folder?.isDirectory()) throw new ExportError(`${dirname(target)}: no such folder`);
  const targetFile = await realpath(target).catch(async () => join(await realpath(dirname(target)), basename(target)));
  for (const member of set.members) {
    const memberFile = await realpath(member.path).catch(() => resolve(member.path));
    if (memberFile === targetFile) throw new ExportError(`${target} is ${member.name}, a WACZ of the set: export to another file`);
  }
}

/** What the merged WACZ is written from: the members' WARC files, and their page lists each gathered into one file. */
interface UnpackedSet {
  warcFiles: string[];
  pagesFile: string;
  extraPagesFile: string;
}

/** The page lists a WACZ holds, and the header line each starts with when a merged list is written. */
const PAGE_LISTS = [
  { entry: "pages/pages.jsonl", header: PAGES_HEADER_LINE },
  { entry: "pages/extraPages.jsonl", header: EXTRA_PAGES_HEADER_LINE },
] as const;

/** Copy every member's WARC files into `work/archive/` and gather their page lists, the sources' pages first. */
async function unpackMembers(members: readonly SetMember[], work: string): Promise<UnpackedSet> {
  await mkdir(join(work, "archive"));
  await mkdir(join(work, "pages"));
  const warcOwner = new Map<string, string>();
  const unpacked = new Map<SetMember, UnpackedPages>();
  for (const [i, member] of members.entries()) {
    const info = await stat(member.path).catch(() => null);
    if (info?.size !== member.size) throw new ExportError(`${member.where} changed since it was checked: ${info ? `${info.size} bytes` : "gone"}, not ${member.size} bytes`);
    try {
      unpacked.set(member, await unpackMember(member, join(work, "pages", String(i)), join(work, "archive"), warcOwner));
    } catch (err) {
      throw err instanceof WaczReadError ? new ExportError(err.message) : err;
    }
  }
  const sourcesFirst = [...members.filter((m) => m.isSource), ...members.filter((m) => !m.isSource)];
  const [pagesFile, extraPagesFile] = await Promise.all(
    PAGE_LISTS.map(async (list, i) => {
      const file = join(work, posix.basename(list.entry));
      // A merged list says it has page text when any member's list says so.
      const hasText = sourcesFirst.some((member) => unpacked.get(member)!.hasText[i]);
      const header = JSON.stringify({ ...(JSON.parse(list.header) as Record<string, unknown>), ...(hasText ? { hasText: true } : {}) });
      const parts = sourcesFirst.map((member) => unpacked.get(member)!.files[i]!);
      await pipeline(Readable.from(concatenated(header + "\n", parts)), createWriteStream(file, { flags: "wx" }));
      return file;
    }),
  );
  return { warcFiles: [...warcOwner.keys()].map((name) => join(work, "archive", name)), pagesFile: pagesFile!, extraPagesFile: extraPagesFile! };
}

/** One member's page lists without their header lines (one file each, in PAGE_LISTS' order), and what the headers said. */
interface UnpackedPages {
  files: string[];
  hasText: boolean[];
}

/** Copy a member's WARC files into `warcFolder` (`warcOwner`: which member each name came from) and its page lists to `pagesPrefix`-*. */
async function unpackMember(member: SetMember, pagesPrefix: string, warcFolder: string, warcOwner: Map<string, string>): Promise<UnpackedPages> {
  const wacz = await openWacz(member.path);
  try {
    for (const entry of wacz.entryNames()) {
      if (!entry.startsWith("archive/") || !/\.warc(\.gz)?$/i.test(entry)) continue;
      // An index line names its WARC file by its base name: two of one name could not be told apart.
      const name = posix.basename(entry);
      const owner = warcOwner.get(name);
      if (owner !== undefined) throw new ExportError(`${owner} and ${member.name} both hold a WARC file named ${name}: one index cannot tell them apart`);
      warcOwner.set(name, member.name);
      await pipeline(await wacz.openEntryStream(entry), createWriteStream(join(warcFolder, name), { flags: "wx" }));
    }
    const unpacked: UnpackedPages = { files: [], hasText: [] };
    for (const list of PAGE_LISTS) {
      let hasText = false;
      const file = `${pagesPrefix}-${posix.basename(list.entry)}`;
      async function* pageLines(): AsyncGenerator<string> {
        if (!wacz.hasEntry(list.entry)) return;
        let first = true;
        for await (const line of nonEmptyLines(await wacz.openEntryStream(list.entry))) {
          const header = first ? pagesHeaderOf(line) : null;
          first = false;
          if (header) hasText = header.hasText === true;
          else yield line + "\n";
        }
      }
      await pipeline(Readable.from(pageLines()), createWriteStream(file, { flags: "wx" }));
      unpacked.files.push(file);
      unpacked.hasText.push(hasText);
    }
    return unpacked;
  } finally {
    await wacz.close();
  }
}

async function* concatenated(first: string, files: readonly string[]): AsyncGenerator<Buffer> {
  yield Buffer.from(first);
  for (const file of files) for await (const chunk of createReadStream(file)) yield chunk as Buffer;
}

async function* nonEmptyLines(stream: NodeJS.ReadableStream): AsyncGenerator<string> {
  for await (const raw of createInterface({ input: Readable.from(stream), crlfDelay: Infinity })) {
    const line = raw.trim();
    if (line) yield line;
  }
}

/** The line as a page list's header ({"format": ...}, no url), or null when it is a page. */
function pagesHeaderOf(line: string): { hasText?: unknown } | null {
  try {
    const parsed = JSON.parse(line) as unknown;
    const isHeader = typeof parsed === "object" && parsed !== null && typeof (parsed as { format?: unknown }).format === "string" && !("url" in parsed);
    return isHeader ? (parsed as { hasText?: unknown }) : null;
  } catch {
    return null;
  }
}
