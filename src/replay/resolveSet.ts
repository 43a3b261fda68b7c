import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { StoreSettings } from "../upload/storeSettings.js";
import { sha256OfFile, type RelationRequirement } from "../wacz/index.js";
import { locationUrl, manifestEntries, ManifestError, type ManifestEntry } from "../wacz/manifest.js";
import { relationRequiresOf } from "../wacz/reader/index.js";
import { collectionPlaces, downloadUrl, FolderPlace, HttpPlace, PlaceError, S3Place, s3Location, type Candidate, type Place } from "./places.js";
import type { MissingWacz, SetMember, WaczSet } from "./waczSet.js";

/** A source that cannot be read at all (no such file, not a WACZ, a manifest that is not JSON): one line, exit 2. */
export class ReplaySourceError extends Error {}

export interface ResolveOptions {
  /** Where crawls write their collections: <cwd>/collections/* are searched. */
  cwd: string;
  /** http(s) base URLs to look in (--from). */
  from: readonly string[];
  /** The S3 store crawls upload to, when STORE_* is set. */
  store: StoreSettings | null;
}

/** A WACZ given or required, before it is found: what must match. */
interface Wanted {
  name: string;
  hash?: string;
  size?: number;
  crawlId?: string;
}

/** A source WACZ as given: where its bytes are and where its dependencies are looked for first. */
interface GivenWacz extends Wanted {
  candidate: Candidate;
  near: Place | null;
  /** Listed by a manifest only because others depend on it (browsertrix's fromDependency). */
  dependency?: boolean;
}

const isHttp = (s: string): boolean => /^https?:\/\//i.test(s);
const isS3 = (s: string): boolean => /^s3:\/\//i.test(s);

/**
 * Resolve a replay source (a WACZ, a collection folder, a multi-WACZ JSON, or an http(s)/s3 URL of one of these)
 * into the set of WACZ files it needs: relation.requires followed transitively, each required WACZ found by name,
 * hash and size near the WACZ that requires it, in the sources' folders, in every collection under --cwd, in the
 * S3 store and under each --from URL. Every file's SHA-256 is read and checked against what requires it.
 */
export async function resolveWaczSet(sources: readonly string[], options: ResolveOptions): Promise<WaczSet> {
  const downloads = await mkdtemp(join(tmpdir(), "replay-set-"));
  const dispose = () => rm(downloads, { recursive: true, force: true });
  try {
    const given: GivenWacz[] = [];
    for (const source of sources) given.push(...(await givenWaczOf(source, options)));
    if (!given.length) throw new ReplaySourceError(`no WACZ file in ${sources.join(" ")}`);
    const resolver = new SetResolver(downloads, await placesToSearch(given, options));
    // Dependencies a manifest lists are taken first: the sources' requires then find them in the set.
    for (const wacz of [...given.filter((g) => g.dependency), ...given.filter((g) => !g.dependency)]) await resolver.addSource(wacz);
    return { members: resolver.members, missing: [...resolver.missing.values()], dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** The places searched for every dependency, after the requiring WACZ's own folder. */
async function placesToSearch(given: GivenWacz[], options: ResolveOptions): Promise<Place[]> {
  const places: Place[] = given.flatMap((g) => (g.near ? [g.near] : []));
  // A WACZ in <cwd>/collections/<name>/ finds its dependencies in the other collections there, whatever --cwd says.
  const siblings = new Set(given.flatMap((g) => (g.near instanceof FolderPlace && basename(dirname(g.near.label)) === "collections" ? [dirname(dirname(g.near.label))] : [])));
  for (const cwd of [...siblings, options.cwd]) places.push(...(await collectionPlaces(cwd)));
  if (options.store) places.push(new S3Place(options.store));
  places.push(...options.from.map((base) => new HttpPlace(base)));
  const seen = new Set<string>();
  return places.filter((p) => !seen.has(p.label) && seen.add(p.label));
}

class SetResolver {
  readonly members: SetMember[] = [];
  readonly missing = new Map<string, MissingWacz>();
  private readonly byHash = new Map<string, SetMember>();

  constructor(
    private readonly downloads: string,
    private readonly places: Place[],
  ) {}

  async addSource(wacz: GivenWacz): Promise<void> {
    const path = await wacz.candidate.local(this.downloads).catch((err: unknown) => {
      throw new ReplaySourceError(err instanceof Error ? err.message : String(err));
    });
    const checked = await this.check(wacz, path);
    if (typeof checked === "string") throw new ReplaySourceError(`${wacz.candidate.where}: ${checked}`);
    const known = this.byHash.get(checked.hash);
    if (known) {
      known.isSource ||= !wacz.dependency;
      return;
    }
    const member: SetMember = { name: wacz.name, hash: checked.hash, size: checked.size, crawlId: wacz.crawlId, path, where: wacz.candidate.where, requiredBy: [], isSource: !wacz.dependency };
    await this.admit(member, wacz.near);
  }

  /**
   * Take a member in: its requirements first (so they come before it), then itself. It is known by its hash before
   * its requirements are looked at, so a cycle of requires ends at it.
   */
  private async admit(member: SetMember, near: Place | null): Promise<void> {
    this.byHash.set(member.hash, member);
    for (const required of await requirementsOf(member)) await this.require(required, member.name, near);
    this.members.push(member);
  }

  private async require(required: RelationRequirement, by: string, near: Place | null): Promise<void> {
    const wanted: Wanted = { name: required.filename, hash: required.hash, size: required.size, crawlId: required.crawlId };
    const known = wanted.hash ? this.byHash.get(wanted.hash) : this.members.find((m) => m.name === wanted.name);
    if (known) {
      if (!known.requiredBy.includes(by)) known.requiredBy.push(by);
      return;
    }
    const key = wanted.hash ?? wanted.name;
    const missing = this.missing.get(key);
    if (missing) {
      missing.requiredBy.push(by);
      return;
    }
    const looked: string[] = [];
    for (const place of near ? [near, ...this.places.filter((p) => p.label !== near.label)] : this.places) {
      let candidates: Candidate[];
      try {
        candidates = await place.candidates(wanted.name, wanted.size, wanted.hash);
      } catch (err) {
        looked.push(`${place.label}: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      // Why the file of that name was not it is worth saying; that other files of the same size were not is not.
      const refused: string[] = [];
      const refuse = (candidate: Candidate, why: string): void => {
        if (basename(candidate.where) === wanted.name) refused.push(why);
      };
      for (const candidate of candidates) {
        if (wanted.size !== undefined && candidate.size !== undefined && candidate.size !== wanted.size) {
          refuse(candidate, `${candidate.where} has ${candidate.size} bytes, not ${wanted.size}`);
          continue;
        }
        let path: string;
        try {
          path = await candidate.local(this.downloads);
        } catch (err) {
          refuse(candidate, err instanceof Error ? err.message : String(err));
          continue;
        }
        const checked = await this.check(wanted, path);
        if (typeof checked === "string") {
          refuse(candidate, `${candidate.where} ${checked}`);
          continue;
        }
        // Named without a hash (a --dedupeConcurrent crawl's), it may be a member found by another name already.
        const same = this.byHash.get(checked.hash);
        if (same) {
          if (!same.requiredBy.includes(by)) same.requiredBy.push(by);
          return;
        }
        const member: SetMember = { name: wanted.name, hash: checked.hash, size: checked.size, crawlId: wanted.crawlId, path, where: candidate.where, requiredBy: [by], isSource: false };
        await this.admit(member, placeOf(candidate.where) ?? near);
        return;
      }
      looked.push(`${place.label}: ${refused.length ? refused.join(", ") : "not there"}`);
    }
    this.missing.set(key, { ...wanted, requiredBy: [by], looked });
  }

  /** The file's hash and size, or why it is not the one wanted. */
  private async check(wanted: Wanted, path: string): Promise<{ hash: string; size: number } | string> {
    const info = await stat(path).catch(() => null);
    if (!info?.isFile()) return "is not there";
    const size = info.size;
    if (wanted.size !== undefined && size !== wanted.size) return `has ${size} bytes, not ${wanted.size}`;
    const hash = `sha256:${await sha256OfFile(path)}`;
    if (wanted.hash && hash !== wanted.hash) return `has another hash (${hash}, not ${wanted.hash})`;
    return { hash, size };
  }
}

/** A local file's folder is where its own dependencies are looked for first. */
function placeOf(where: string): Place | null {
  if (isHttp(where)) return new HttpPlace(where.slice(0, where.lastIndexOf("/") + 1));
  if (isS3(where)) return null;
  return new FolderPlace(dirname(where));
}

/** relation.requires of a member's datapackage.json. */
async function requirementsOf(member: SetMember): Promise<RelationRequirement[]> {
  return relationRequiresOf(member.path).catch((err: unknown) => {
    throw new ReplaySourceError(`${member.where}: not a readable WACZ (${err instanceof Error ? err.message : String(err)})`);
  });
}

/** The WACZ files a source names, each with the place its dependencies are looked for first. */
async function givenWaczOf(source: string, options: ResolveOptions): Promise<GivenWacz[]> {
  if (isS3(source)) {
    const { settings, name } = s3Location(source, options.store);
    if (name.endsWith(".json")) throw new ReplaySourceError(`${source}: a manifest in S3 is read by URL: give its http(s) URL`);
    const near = new S3Place(settings);
    const found = (await near.candidates(name, undefined).catch((err: unknown) => {
      throw new ReplaySourceError(err instanceof Error ? err.message : String(err));
    })).filter((c) => c.where === source);
    if (!found.length) throw new ReplaySourceError(`${source}: no such object in the store`);
    return [{ name, candidate: found[0]!, near }];
  }
  if (isHttp(source)) {
    const url = new URL(source);
    if (url.pathname.endsWith(".json")) return manifestWacz(url, options);
    const folder = url.href.slice(0, url.href.lastIndexOf("/") + 1);
    return [{ name: basename(decodeURIComponent(url.pathname)), candidate: { where: url.href, size: undefined, local: (into) => downloadUrl(url.href, into) }, near: new HttpPlace(folder) }];
  }
  const path = resolve(source);
  const info = await stat(path).catch(() => null);
  if (!info) throw new ReplaySourceError(`${source}: no such file or folder`);
  if (info.isDirectory()) {
    const names = (await readdir(path)).filter((n) => n.endsWith(".wacz")).sort();
    if (!names.length) throw new ReplaySourceError(`${source}: a folder with no .wacz file in it`);
    const near = new FolderPlace(path);
    return Promise.all(names.map(async (name) => ({ name, candidate: { where: join(path, name), size: (await stat(join(path, name))).size, local: async () => join(path, name) }, near })));
  }
  if (path.endsWith(".json")) return manifestWacz(locationUrl(path), options);
  return [{ name: basename(path), candidate: { where: path, size: info.size, local: async () => path }, near: new FolderPlace(dirname(path)) }];
}

/** The WACZ files a multi-WACZ JSON lists (nested manifests followed), with the hashes and sizes it gives. */
async function manifestWacz(url: URL, options: ResolveOptions, visited = new Set<string>()): Promise<GivenWacz[]> {
  if (visited.has(url.href)) return [];
  visited.add(url.href);
  const where = url.protocol === "file:" ? fileURLToPath(url) : url.href;
  let text: string;
  try {
    text = url.protocol === "file:" ? await readFile(fileURLToPath(url), "utf8") : await fetchText(url);
  } catch (err) {
    throw new ReplaySourceError(`${where}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let listed: ReturnType<typeof manifestEntries>;
  try {
    listed = manifestEntries(JSON.parse(text), url, where);
  } catch (err) {
    throw new ReplaySourceError(`${where}: ${err instanceof ManifestError ? err.message : err instanceof SyntaxError ? `not valid JSON (${err.message})` : String(err)}`);
  }
  if (listed.problems.length) throw new ReplaySourceError(`${listed.problems[0]!.entry}: ${listed.problems[0]!.message}`);
  const waczFiles: GivenWacz[] = [];
  for (const entry of listed.entries) {
    if (entry.isManifest) waczFiles.push(...(await manifestWacz(entry.location, options, visited)));
    else waczFiles.push(await listedWacz(entry));
  }
  return waczFiles;
}

async function listedWacz(entry: ManifestEntry): Promise<GivenWacz> {
  const wanted = { name: entry.name, hash: entry.hash, size: entry.size, crawlId: entry.crawlId, dependency: entry.fromDependency };
  if (entry.location.protocol === "file:") {
    const path = fileURLToPath(entry.location);
    return { ...wanted, candidate: { where: path, size: undefined, local: async () => path }, near: new FolderPlace(dirname(path)) };
  }
  const href = entry.location.href;
  return { ...wanted, candidate: { where: href, size: undefined, local: (into) => downloadUrl(href, into) }, near: new HttpPlace(href.slice(0, href.lastIndexOf("/") + 1)) };
}

async function fetchText(url: URL): Promise<string> {
  const response = await fetch(url).catch((err: unknown) => {
    throw new PlaceError(`unreachable (${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)})`);
  });
  if (!response.ok) throw new PlaceError(`HTTP ${response.status}`);
  return response.text();
}

