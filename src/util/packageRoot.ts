import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_NAME = "warc-crawler";

/**
 * The package's root: the nearest folder above this module whose package.json names this package. This module
 * runs from src/ (tests), dist/src/ (built) or from the programs' shared chunks (dist/chunks/), each at its own
 * depth.
 */
export function packageRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && packageManifest(manifest).name === PACKAGE_NAME) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package root above ${from}`);
  }
}

function packageManifest(path: string): { name?: string; version?: string } {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as { name?: string; version?: string };
  } catch {
    return {};
  }
}

/** This package's version, from its package.json; "0.0.0" where that cannot be read. */
export function packageVersion(): string {
  try {
    return packageManifest(join(packageRoot(), "package.json")).version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}
