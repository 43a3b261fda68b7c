/**
 * A browser profile as a file: a gzipped tar of the Chromium user-data folder (`Default/Cookies`,
 * `Default/Local Storage/`, `Local State`...), with entries named `./...` as browsertrix-crawler's
 * `tar cvfz profile.tar.gz ./` names them, so each crawler loads the other's.
 */
import { chmodSync, closeSync, openSync, renameSync, rmSync, type Stats } from "node:fs";
import { mkdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { ReadEntry } from "tar";

/** tar, loaded on first use: most crawls use no profile and do not pay for it at start-up. */
const tar = () => import("tar");

/** Chromium's lock files (symlinks naming the host and pid that held the profile): never carried over. */
const SINGLETON = /^Singleton/;
/**
 * Caches and crash dumps: large, rebuilt by Chromium, and no part of a login (browsertrix-crawler clears
 * the HTTP cache before saving; we leave these folders out altogether).
 */
const LEFT_OUT_FOLDERS = new Set(["Cache", "Code Cache", "GPUCache", "DawnCache", "DawnGraphiteCache", "DawnWebGPUCache", "GrShaderCache", "GraphiteDawnCache", "ShaderCache", "Crashpad", "component_crx_cache", "extensions_crx_cache", "Service Worker/CacheStorage", "Service Worker/ScriptCache"]);

/** A profile archive unpacked larger than this is refused (a tar.gz can expand a thousandfold). */
export const MAX_UNPACKED_BYTES = 2 * 1024 ** 3;

/** Whether a path inside the user-data folder (relative, `./` or not) goes into the archive. */
export function keptInArchive(relativePath: string): boolean {
  const path = relativePath.replace(/^\.\//, "").replace(/\/$/, "");
  if (path === "" || path === ".") return true;
  if (SINGLETON.test(basename(path))) return false;
  const parts = path.split("/");
  // "Cache" at the top or in a profile folder ("Default/Cache"), and two-level names anywhere below.
  for (let i = 0; i < parts.length; i++) {
    if (LEFT_OUT_FOLDERS.has(parts[i]) || (i + 1 < parts.length && LEFT_OUT_FOLDERS.has(`${parts[i]}/${parts[i + 1]}`))) return false;
  }
  return true;
}

/**
 * Write the user-data folder `dir` (its browser closed) to `file` as a tar.gz readable by its owner only
 * (mode 0600: it holds session cookies). Written beside `file` and renamed into place, so a reader never
 * sees half an archive and an existing file is replaced whole.
 */
export async function packProfile(dir: string, file: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const partial = join(dirname(file), `.${basename(file)}.${process.pid}.partial`);
  // Created 0600 before a byte is written: the cookies are never readable by others, even for a moment.
  closeSync(openSync(partial, "w", 0o600));
  try {
    await (await tar()).create({ gzip: true, file: partial, cwd: dir, portable: true, filter: (path: string, _entry: Stats | ReadEntry) => keptInArchive(path) }, ["."]);
    chmodSync(partial, 0o600);
    renameSync(partial, file);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
}

export interface UnpackResult {
  files: number;
  bytes: number;
  /** Entries not unpacked: links (a symlink could point out of the folder), devices, lock files. */
  skipped: string[];
}

/**
 * Unpack a profile archive (ours, or browsertrix-crawler's) into `dir`, the fresh user-data folder of a
 * browser about to start. Only plain files and folders are written, inside `dir` (absolute names and
 * `..` are refused by the tar library), up to MAX_UNPACKED_BYTES; Chromium's lock files are left out.
 * Throws if the file is not a tar.gz.
 */
export async function unpackProfile(file: string, dir: string, maxBytes = MAX_UNPACKED_BYTES): Promise<UnpackResult> {
  const result: UnpackResult = { files: 0, bytes: 0, skipped: [] };
  let tooLarge = false;
  let entries = 0;
  const filter = (path: string, entry: Stats | ReadEntry): boolean => {
    entries += 1;
    const type = "type" in entry ? entry.type : "File";
    const name = path.replace(/^\.\//, "");
    if ((type !== "File" && type !== "OldFile" && type !== "ContiguousFile" && type !== "Directory") || SINGLETON.test(basename(name))) {
      result.skipped.push(name);
      return false;
    }
    if (type === "Directory") return true;
    const size = entry.size ?? 0;
    if (tooLarge || result.bytes + size > maxBytes) {
      tooLarge = true;
      return false;
    }
    result.files += 1;
    result.bytes += size;
    return true;
  };
  try {
    await (await tar()).extract({ file, cwd: dir, strict: true, filter, preservePaths: false, unlink: true });
  } catch (err) {
    throw new Error(`not a readable tar.gz profile: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (entries === 0) throw new Error("not a tar.gz profile: the archive is empty");
  if (tooLarge) throw new Error(`the profile unpacks to more than ${Math.round(maxBytes / 1024 ** 2)} MiB`);
  return result;
}

/** The names in a profile archive, as stored (`./Default/Cookies`...). */
export async function listProfile(file: string): Promise<string[]> {
  const names: string[] = [];
  await (await tar()).list({ file, onReadEntry: (entry: ReadEntry) => names.push(entry.path) });
  return names;
}

/** What create-login-profile notes about a profile, in a file of its own at the top of the user-data folder (Chromium ignores it). */
export const PROFILE_INFO_FILE = "warc-crawler-profile.json";

export interface ProfileInfo {
  /** The login page the profile was made on: a crawl page that ends there has lost the session. */
  loginUrl: string | null;
  created: string;
}

/** The profile's info file, if the archive has one (browsertrix-crawler's profiles do not). */
export async function readProfileInfo(file: string): Promise<ProfileInfo | null> {
  const chunks: Buffer[] = [];
  let found = false;
  let entries = 0;
  await (await tar()).list({
    file,
    strict: true,
    filter: (path: string) => {
      entries += 1;
      return path.replace(/^\.\//, "") === PROFILE_INFO_FILE;
    },
    onReadEntry: (entry: ReadEntry) => {
      if (entry.size > 65_536) return;
      found = true;
      entry.on("data", (chunk: Buffer) => chunks.push(chunk));
    },
  });
  if (entries === 0) throw new Error("the archive is empty");
  if (!found) return null;
  try {
    const value = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Partial<ProfileInfo>;
    return { loginUrl: typeof value.loginUrl === "string" ? value.loginUrl : null, created: typeof value.created === "string" ? value.created : "" };
  } catch {
    return null;
  }
}
