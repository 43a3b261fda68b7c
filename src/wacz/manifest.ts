// The multi-WACZ JSON manifest: one file listing several WACZ files, which the indexer imports (--sourceUrl),
// `replay` and `qa` open, and ReplayWeb.page loads as one collection. Read and written only here.
import { posix } from "node:path";
import { pathToFileURL } from "node:url";

/** One WACZ (or a nested manifest) a manifest lists. */
export interface ManifestEntry {
  name: string;
  /** Where it is: file:// or http(s):// URL, resolved against the manifest's own location. */
  location: URL;
  /** sha256:<hex>, when listed. */
  hash?: string;
  size?: number;
  crawlId?: string;
  /** browsertrix's marker for a WACZ listed only because others depend on it. */
  fromDependency?: boolean;
  /** A manifest nested in this one (its path ends in .json). */
  isManifest: boolean;
}

export interface ManifestProblem {
  /** e.g. "<manifest> resources[3]" */
  entry: string;
  message: string;
}

/** What a manifest says, as written: paths relative to the manifest where possible. */
export interface ManifestResource {
  name: string;
  path: string;
  hash?: string;
  size?: number;
  crawlId?: string;
  fromDependency?: boolean;
}

export interface Manifest {
  profile?: string;
  resources: ManifestResource[];
}

export class ManifestError extends Error {}

/** A local path, file:// or http(s):// URL, as a URL; relative ones against `base` when given. */
export function locationUrl(source: string, base?: string): URL {
  if (/^(https?|file):\/\//i.test(source)) return new URL(source);
  if (base) return new URL(source, base);
  return pathToFileURL(source);
}

export const isManifestLocation = (url: URL): boolean => /\.json$/i.test(url.pathname);

const nameOf = (url: URL): string => posix.basename(decodeURIComponent(url.pathname));

/**
 * The entries of a parsed manifest `{"resources":[{"name","path","hash","size","crawlId"}]}` at `where`.
 * Entries that cannot be used are returned as problems, not thrown; a document with no resources list throws.
 */
export function manifestEntries(json: unknown, where: URL, label = where.href): { entries: ManifestEntry[]; problems: ManifestProblem[] } {
  const list = (json as { resources?: unknown } | null)?.resources;
  if (!Array.isArray(list)) throw new ManifestError('manifest has no "resources" list');
  const entries: ManifestEntry[] = [];
  const problems: ManifestProblem[] = [];
  for (const [i, raw] of list.entries()) {
    const entry = (raw ?? {}) as Partial<Record<"name" | "path" | "crawlId" | "hash", unknown>> & { size?: unknown; fromDependency?: unknown };
    const at = `${label} resources[${i}]`;
    if (typeof entry !== "object" || typeof entry.path !== "string" || !entry.path) {
      problems.push({ entry: at, message: 'resource has no "path"' });
      continue;
    }
    let location: URL;
    try {
      location = locationUrl(entry.path, where.href);
    } catch {
      problems.push({ entry: at, message: `bad path ${JSON.stringify(entry.path)}` });
      continue;
    }
    entries.push({
      name: typeof entry.name === "string" && entry.name ? entry.name : nameOf(location),
      location,
      hash: typeof entry.hash === "string" && entry.hash ? entry.hash : undefined,
      size: typeof entry.size === "number" ? entry.size : undefined,
      crawlId: typeof entry.crawlId === "string" && entry.crawlId ? entry.crawlId : undefined,
      fromDependency: entry.fromDependency === true ? true : undefined,
      isManifest: isManifestLocation(location),
    });
  }
  return { entries, problems };
}

/** `target` as a path relative to the manifest at `manifest` when both are local files, else absolute. */
export function relativeLocation(target: URL, manifest: URL): string {
  if (target.protocol === "file:" && manifest.protocol === "file:") {
    const relative = posix.relative(posix.dirname(decodeURIComponent(manifest.pathname)), decodeURIComponent(target.pathname));
    return relative.split("/").map(encodeURIComponent).join("/");
  }
  if (target.origin === manifest.origin && target.protocol !== "file:") {
    const dir = manifest.pathname.slice(0, manifest.pathname.lastIndexOf("/") + 1);
    if (target.pathname.startsWith(dir)) return target.pathname.slice(dir.length) + target.search;
  }
  return target.protocol === "file:" ? decodeURIComponent(target.pathname) : target.href;
}

/** The manifest's bytes: resources in the order given, paths relative to the manifest where they can be. */
export function serializeManifest(resources: readonly (Omit<ManifestResource, "path"> & { location: URL })[], manifest: URL): string {
  const document: Manifest = {
    profile: "multi-wacz-package",
    resources: resources.map(({ location, ...rest }) => ({
      name: rest.name,
      path: relativeLocation(location, manifest),
      ...(rest.hash ? { hash: rest.hash } : {}),
      ...(rest.size !== undefined ? { size: rest.size } : {}),
      ...(rest.crawlId ? { crawlId: rest.crawlId } : {}),
      ...(rest.fromDependency ? { fromDependency: true } : {}),
    })),
  };
  return JSON.stringify(document, null, 2) + "\n";
}
