// datapackage.json and datapackage-digest.json for WACZ 1.1.1.
// profile must stay "data-package": the replay client rejects the 1.2 draft's "wacz".
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { posix } from "node:path";

export const WACZ_VERSION = "1.1.1";
export const DATAPACKAGE_PATH = "datapackage.json";
export const DATAPACKAGE_DIGEST_PATH = "datapackage-digest.json";

export interface DataPackageResource {
  name: string;
  path: string;
  /** sha256:<hex> */
  hash: string;
  bytes: number;
}

/** Another WACZ this one depends on (e.g. it holds the originals of our revisits). */
export interface RelationRequirement {
  filename: string;
  /** Absent only for a WACZ of a concurrent crawl still being written (--dedupeConcurrent), as browsertrix-crawler lists it. */
  hash?: string;
  size?: number;
  crawlId: string;
}

export interface DataPackage {
  profile: "data-package";
  wacz_version: typeof WACZ_VERSION;
  title?: string;
  description?: string;
  created: string;
  software: string;
  mainPageUrl?: string;
  mainPageDate?: string;
  resources: DataPackageResource[];
  relation?: { requires: RelationRequirement[] };
}

export interface DataPackageDigest {
  path: typeof DATAPACKAGE_PATH;
  hash: string;
  /** A signing server's answer for `hash` (WACZ_SIGN_URL), as js-wacz stores it. */
  signedData?: unknown;
}

export interface DataPackageOptions {
  resources: readonly DataPackageResource[];
  software: string;
  /** defaults to now */
  created?: Date;
  title?: string;
  description?: string;
  mainPageUrl?: string;
  mainPageDate?: string;
  requires?: readonly RelationRequirement[];
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** A file's sha256 as hex, read in chunks (a WACZ may be larger than memory). */
export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Resource entry for a zip path; name is the file's basename, as py-wacz does. */
export function makeResource(path: string, hashHex: string, bytes: number): DataPackageResource {
  return { name: posix.basename(path), path, hash: `sha256:${hashHex}`, bytes };
}

export function buildDataPackage(opts: DataPackageOptions): DataPackage {
  for (const r of opts.resources) {
    if (r.path === DATAPACKAGE_PATH || r.path === DATAPACKAGE_DIGEST_PATH) {
      throw new Error(`${r.path} cannot list itself as a resource`);
    }
  }
  const pkg: DataPackage = {
    profile: "data-package",
    wacz_version: WACZ_VERSION,
    created: (opts.created ?? new Date()).toISOString(),
    software: opts.software,
    resources: opts.resources.map((r) => ({ ...r })),
  };
  // Optional keys are left out entirely rather than written as null.
  if (opts.title !== undefined) pkg.title = opts.title;
  if (opts.description !== undefined) pkg.description = opts.description;
  if (opts.mainPageUrl !== undefined) pkg.mainPageUrl = opts.mainPageUrl;
  if (opts.mainPageDate !== undefined) pkg.mainPageDate = opts.mainPageDate;
  if (opts.requires && opts.requires.length > 0) {
    pkg.relation = { requires: opts.requires.map((r) => ({ ...r })) };
  }
  return pkg;
}

export function serializeDataPackage(pkg: DataPackage): Buffer {
  return Buffer.from(JSON.stringify(pkg, null, 2) + "\n", "utf8");
}

/** The digest covers the exact bytes stored as datapackage.json. */
export function buildDataPackageDigest(datapackageBytes: Uint8Array, signedData?: unknown): DataPackageDigest {
  const digest: DataPackageDigest = { path: DATAPACKAGE_PATH, hash: `sha256:${sha256Hex(datapackageBytes)}` };
  if (signedData !== undefined && signedData !== null) digest.signedData = signedData;
  return digest;
}

export function serializeDataPackageDigest(digest: DataPackageDigest): Buffer {
  return Buffer.from(JSON.stringify(digest, null, 2) + "\n", "utf8");
}
