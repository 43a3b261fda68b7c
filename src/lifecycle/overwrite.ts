import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { logger } from "../log/logger.js";
import { storageErrorMessage } from "../util/storageErrors.js";
import type { CollectionPaths } from "../config/collectionPaths.js";

/**
 * --overwrite: delete the collection's folder before the crawl starts (browsertrix-crawler's meaning).
 * Only ever <cwd>/collections/<name>, and never while a crawl runs on it: its embedded redis-server
 * holds the folder's lock then, and deleting the files under it would wreck that crawl.
 */
export function overwriteCollection(paths: CollectionPaths, cwd: string, collection: string): void {
  const root = resolve(paths.root);
  if (root !== join(resolve(cwd), "collections", collection) || /^\.*$/.test(basename(root)) || basename(dirname(root)) !== "collections") {
    throw new Error(`--overwrite: refusing to delete ${root}: not a collection folder under ${join(resolve(cwd), "collections")}`);
  }
  if (!existsSync(root)) return;
  const lock = join(paths.redisData, "embedded-redis.lock");
  if (existsSync(lock) && isLocked(lock)) {
    throw new Error(`--overwrite: a crawl is running on ${root} (its redis-server holds ${lock}): not deleting it`);
  }
  try {
    // A symbolic link named like the collection is removed, not what it points at.
    rmSync(root, { recursive: true, force: true });
  } catch (err) {
    throw new Error(`--overwrite: cannot delete ${root}: ${storageErrorMessage(err)}`);
  }
  logger.info("crawl", "--overwrite: the collection's folder was deleted before crawling", { path: root });
}

/** Whether another process holds an flock on `file` (the embedded redis-server's launcher takes one). */
function isLocked(file: string): boolean {
  const probe = spawnSync("flock", ["-n", file, "true"], { stdio: "ignore", timeout: 5000 });
  // Without flock(1) the launcher takes no lock either: nothing tells, so nothing is held.
  if (probe.error) return false;
  return probe.status !== 0;
}
