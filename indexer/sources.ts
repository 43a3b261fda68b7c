import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

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
export function toLocationUrl(source: string, base?: string): URL {
  if (/^(https?|file):\/\//i.test(source)) return new URL(source);
  if (base) return new URL(source, base);
  return pathToFileURL(source);
}

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

function isManifestPath(url: URL): boolean {
  return /\.json$/i.test(url.pathname);
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
  if (!isManifestPath(url)) {
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
  const list = (manifest as { resources?: unknown })?.resources;
  if (!Array.isArray(list)) return fail('manifest has no "resources" list');

  for (const [i, raw] of list.entries()) {
    const entry = raw as Partial<Record<"name" | "path" | "crawlId" | "hash", unknown>> & { size?: unknown };
    const label = `${where} resources[${i}]`;
    if (!entry || typeof entry !== "object" || typeof entry.path !== "string" || !entry.path) {
      problems.push({ entry: label, message: 'resource has no "path"' });
      continue;
    }
    let location: URL;
    try {
      location = toLocationUrl(entry.path, url.href);
    } catch {
      problems.push({ entry: label, message: `bad path ${JSON.stringify(entry.path)}` });
      continue;
    }
    if (isManifestPath(location)) {
      await expandManifest(location, resources, problems, visited, false);
      continue;
    }
    const name = typeof entry.name === "string" && entry.name ? entry.name : basename(decodeURIComponent(location.pathname));
    resources.push({
      name,
      location: location.href,
      crawlId: typeof entry.crawlId === "string" && entry.crawlId ? entry.crawlId : crawlIdFromName(name),
      hash: typeof entry.hash === "string" ? entry.hash : undefined,
      size: typeof entry.size === "number" ? entry.size : undefined,
    });
  }
}
