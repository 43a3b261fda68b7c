import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { isManifestLocation, locationUrl, manifestEntries } from "../src/wacz/manifest.js";

/** One WACZ file to import, as named by a manifest (or the single WACZ given). */
export interface ImportResource {
  /** Unique WACZ name (the same WACZ at another path is the same resource). */
  name: string;
  /** file:// or http(s):// URL of the WACZ. */
  location: string;
  crawlId: string;
  hash?: string;
  size?: number;
}

export interface SourceProblem {
  entry: string;
  message: string;
}

export class SourceError extends Error {}

const MAX_MANIFEST_BYTES = 50_000_000;

/** A local path, file:// or http(s):// URL, as a URL. */
export const toLocationUrl = locationUrl;

/** Display form: a local path for file:// URLs. */
export function displayLocation(location: string): string {
  return location.startsWith("file:") ? fileURLToPath(location) : location;
}

async function readSource(url: URL): Promise<Buffer> {
  if (url.protocol === "file:") {
    try {
      return await readFile(fileURLToPath(url));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new SourceError(code === "ENOENT" ? "file not found" : `cannot read file (${code ?? String(err)})`);
    }
  }
  let response;
  try {
    // Loaded here only: a local manifest does not pay undici's start-up time.
    const { request } = await import("./undiciRequest.js");
    response = await request(url, { method: "GET", headersTimeout: 30_000, bodyTimeout: 60_000 });
  } catch (err) {
    throw new SourceError(`unreachable (${err instanceof Error ? err.message : String(err)})`);
  }
  if (response.statusCode !== 200) {
    await response.body.dump();
    throw new SourceError(`HTTP ${response.statusCode}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_MANIFEST_BYTES) throw new SourceError("manifest larger than 50 MB");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function crawlIdFromName(name: string): string {
  return name.replace(/\.wacz$/i, "");
}

/**
 * Expand --sourceUrl into the WACZ files to import: a single WACZ, or a manifest
 * `{"resources":[{"name","path","hash","size","crawlId"}]}` whose paths are relative to it and whose
 * resources may themselves be manifests. Problems with single entries are collected, not thrown; a
 * top-level source that cannot be read or parsed throws SourceError.
 */
export async function resolveSources(
  source: string,
  options: { sourceCrawlId?: string } = {},
): Promise<{ resources: ImportResource[]; problems: SourceProblem[] }> {
  const url = toLocationUrl(source);
  if (!isManifestLocation(url)) {
    const name = basename(decodeURIComponent(url.pathname));
    return { resources: [{ name, location: url.href, crawlId: options.sourceCrawlId ?? crawlIdFromName(name) }], problems: [] };
  }
  const resources: ImportResource[] = [];
  const problems: SourceProblem[] = [];
  await expandManifest(url, resources, problems, new Set(), true);
  return { resources, problems };
}

async function expandManifest(
  url: URL,
  resources: ImportResource[],
  problems: SourceProblem[],
  visited: Set<string>,
  topLevel: boolean,
): Promise<void> {
  const where = displayLocation(url.href);
  if (visited.has(url.href)) {
    problems.push({ entry: where, message: "manifest includes itself (cycle); skipped" });
    return;
  }
  visited.add(url.href);
  const fail = (message: string) => {
    if (topLevel) throw new SourceError(`${where}: ${message}`);
    problems.push({ entry: where, message });
  };
  let manifest: unknown;
  try {
    manifest = JSON.parse((await readSource(url)).toString("utf8"));
  } catch (err) {
    return fail(err instanceof SyntaxError ? `not valid JSON (${err.message})` : err instanceof Error ? err.message : String(err));
  }
  let listed: ReturnType<typeof manifestEntries>;
  try {
    listed = manifestEntries(manifest, url, where);
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }
  problems.push(...listed.problems);
  for (const entry of listed.entries) {
    if (entry.isManifest) {
      await expandManifest(entry.location, resources, problems, visited, false);
      continue;
    }
    resources.push({
      name: entry.name,
      location: entry.location.href,
      crawlId: entry.crawlId ?? crawlIdFromName(entry.name),
      hash: entry.hash,
      size: entry.size,
    });
  }
}
