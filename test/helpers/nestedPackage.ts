/**
 * The package Browsertrix's "download with dependencies" writes: a zip of WACZ files, each stored (uncompressed)
 * under its own name, and a top-level datapackage.json of profile multi-wacz-package listing them. The export does
 * not write this (ReplayWeb.page misses revisits' originals in it: see src/replay/exportSet.ts); tests build it to
 * show what fails.
 */
import { basename } from "node:path";
import { writeStoredZip } from "../../src/wacz/index.js";

export interface PackagedWacz {
  path: string;
  hash: string;
  size: number;
  crawlId?: string;
}

export async function writeNestedPackage(wacz: readonly PackagedWacz[], outPath: string): Promise<void> {
  const resources = wacz.map((w) => ({ name: basename(w.path), path: basename(w.path), hash: w.hash, size: w.size, ...(w.crawlId ? { crawlId: w.crawlId } : {}) }));
  await writeStoredZip(
    outPath,
    wacz.map((w) => ({ zipPath: basename(w.path), sourcePath: w.path })),
    () => [{ zipPath: "datapackage.json", data: Buffer.from(JSON.stringify({ profile: "multi-wacz-package", resources }, null, 2)) }],
  );
}
