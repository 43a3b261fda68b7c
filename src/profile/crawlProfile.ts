import { existsSync, renameSync, rmSync } from "node:fs";
import { errorMessage, logger } from "../log/logger.js";
import { packProfile, readProfileInfo, unpackProfile } from "./profileArchive.js";
import { localProfile, ProfileSourceError } from "./profileSource.js";

export { ProfileSourceError };

/** The crawl's --profile, ready for every browser launch: a local tar.gz, and the login page it notes. */
export interface CrawlProfile {
  path: string;
  loginUrl: string | null;
  dispose: () => void;
}

/**
 * Fetch (a URL) and check the crawl's --profile once, before the crawl: a file that is not a tar.gz is
 * bad input, not a browser that fails to start later.
 */
export async function openCrawlProfile(source: string, userAgent: string | null): Promise<CrawlProfile> {
  const local = await localProfile(source, userAgent);
  try {
    const info = await readProfileInfo(local.path);
    return { path: local.path, loginUrl: info?.loginUrl ?? null, dispose: local.dispose };
  } catch (err) {
    local.dispose();
    throw new ProfileSourceError(`--profile ${local.path === source ? source : "download"} is not a tar.gz browser profile: ${errorMessage(err)}`);
  }
}

/** A launch hook (LaunchOptions.prepareProfile): the fresh user-data folder gets its own copy of the profile. */
export function unpackInto(archive: string): (profileDir: string) => Promise<void> {
  return async (profileDir) => {
    const unpacked = await unpackProfile(archive, profileDir);
    logger.info("browser", "browser profile loaded", { files: unpacked.files, bytes: unpacked.bytes, skipped: unpacked.skipped.length });
  };
}

/** Where the crawl's browser leaves its profile (--saveProfile) until the crawl is known to have finished. */
export function pendingProfileFile(target: string): string {
  return `${target}.${process.pid}.pending`;
}

/** A launch hook (LaunchOptions.beforeRemove): the closing browser's user-data folder, packed for --saveProfile. */
export function packInto(file: string): (profileDir: string) => Promise<void> {
  return (profileDir) => packProfile(profileDir, file);
}

/**
 * --saveProfile once the crawl is over: the profile the last browser left becomes the target file if the
 * crawl finished (browsertrix-crawler saves it only then), and is removed otherwise.
 */
export function settleSavedProfile(target: string, finished: boolean): void {
  const pending = pendingProfileFile(target);
  if (!existsSync(pending)) {
    if (finished) logger.warn("browser", "--saveProfile: no browser profile to save (no browser ran)");
    return;
  }
  if (!finished) {
    rmSync(pending, { force: true });
    logger.info("browser", "--saveProfile: the crawl did not finish, the profile is not saved");
    return;
  }
  renameSync(pending, target);
  logger.info("browser", "browser profile saved", { file: target });
}
