import { mkdirSync } from "node:fs";
import { join } from "node:path";

/** The folders and files of one collection under --cwd. */
export function collectionPaths(cwd: string, collection: string) {
  const root = join(cwd, "collections", collection);
  return {
    root,
    archive: join(root, "archive"),
    pages: join(root, "pages"),
    logs: join(root, "logs"),
    redisData: join(root, "redis"),
    /** One record per running Chromium (src/browser/runningBrowsers.ts). */
    browsers: join(root, "browsers"),
    wacz: join(root, `${collection}.wacz`),
  };
}

export type CollectionPaths = ReturnType<typeof collectionPaths>;

export function createCollectionDirs(paths: CollectionPaths): void {
  for (const dir of [paths.archive, paths.pages, paths.logs]) mkdirSync(dir, { recursive: true });
}
