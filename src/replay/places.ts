import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { downloadObject } from "../upload/downloadObject.js";
import type { StoreSettings } from "../upload/storeSettings.js";
import { listStoredObjects, storedHash, type StoredObject } from "../upload/storedObjects.js";

/** A file that may be the WACZ looked for: its size is known before any byte is read. */
export interface Candidate {
  /** Shown to the user: a path, URL or s3://bucket/key. */
  where: string;
  size: number | undefined;
  /** A local path holding its bytes (downloaded into `into` when remote). */
  local(into: string): Promise<string>;
}

/** Where required WACZ files are looked for. */
export interface Place {
  /** Shown to the user in "looked in ...". */
  readonly label: string;
  /** Files that may be `name`: the file of that name first, then files of the size given (a WACZ renamed when uploaded). */
  candidates(name: string, size: number | undefined, hash?: string): Promise<Candidate[]>;
}

export class PlaceError extends Error {}

const localCandidate = (path: string, size: number): Candidate => ({ where: path, size, local: async () => path });

/** A folder of this machine: a collection folder, or the folder a WACZ was given in. */
export class FolderPlace implements Place {
  readonly label: string;
  constructor(private readonly folder: string) {
    this.label = resolve(folder);
  }

  async candidates(name: string, size: number | undefined): Promise<Candidate[]> {
    const names = await readdir(this.folder).catch(() => [] as string[]);
    const found: Candidate[] = [];
    const byName = names.includes(name) ? await stat(join(this.folder, name)).catch(() => null) : null;
    if (byName?.isFile()) found.push(localCandidate(join(this.label, name), byName.size));
    if (size === undefined) return found;
    for (const other of names.sort()) {
      if (other === name || !other.endsWith(".wacz")) continue;
      const info = await stat(join(this.folder, other)).catch(() => null);
      if (info?.isFile() && info.size === size) found.push(localCandidate(join(this.label, other), info.size));
    }
    return found;
  }
}

/** Every collection folder under --cwd (<cwd>/collections/<name>/). */
export async function collectionPlaces(cwd: string): Promise<FolderPlace[]> {
  const root = join(cwd, "collections");
  const names = await readdir(root, { withFileTypes: true }).catch(() => []);
  return names.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort().map((name) => new FolderPlace(join(root, name)));
}

/** A download's file name in the downloads folder: unique, and ending as the original's. */
const downloadName = (name: string): string => `${randomBytes(4).toString("hex")}-${name || "download"}`;

/** Download `url` into the folder `into`, refusing anything but a 200. */
export async function downloadUrl(url: string, into: string): Promise<string> {
  const response = await fetch(url).catch((err: unknown) => {
    throw new PlaceError(`cannot download ${url}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`);
  });
  if (!response.ok || !response.body) throw new PlaceError(`cannot download ${url}: HTTP ${response.status}`);
  const path = join(into, downloadName(basename(new URL(url).pathname)));
  await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream<Uint8Array>), createWriteStream(path));
  return path;
}

/** An http(s) base URL (--from): <base>/<name>, by name only (a web server cannot be listed). */
export class HttpPlace implements Place {
  readonly label: string;
  private readonly base: string;
  constructor(base: string) {
    this.base = base.endsWith("/") ? base : `${base}/`;
    this.label = this.base;
  }

  async candidates(name: string): Promise<Candidate[]> {
    const url = new URL(encodeURIComponent(name), this.base).href;
    const head = await fetch(url, { method: "HEAD" }).catch(() => null);
    // A server that refuses HEAD may still serve GET: the size is then learned from the download.
    if (head && (head.status === 404 || head.status === 410)) return [];
    const length = head?.ok ? Number(head.headers.get("content-length") ?? NaN) : NaN;
    return [{ where: url, size: Number.isFinite(length) ? length : undefined, local: (into) => downloadUrl(url, into) }];
  }
}

/**
 * The S3 store the crawls upload to (STORE_* settings): objects under its key prefix. A WACZ is uploaded under
 * STORE_FILENAME (by default `<time>-<crawl id>.wacz`), not the name its dependents know it by, so objects of the
 * size looked for are candidates too; the sha256 an upload keeps with the object, or else the bytes, decide.
 */
export class S3Place implements Place {
  readonly label: string;
  private listing: Promise<StoredObject[]> | null = null;
  constructor(private readonly settings: StoreSettings) {
    this.label = `s3://${settings.bucket}/${settings.keyPrefix}`;
  }

  async candidates(name: string, size: number | undefined, hash?: string): Promise<Candidate[]> {
    this.listing ??= listStoredObjects(this.settings).catch((err: unknown) => {
      throw new PlaceError(`cannot list ${this.label} at ${this.settings.endpoint}: ${err instanceof Error ? err.message : String(err)}`);
    });
    const objects = await this.listing;
    const prefix = this.settings.keyPrefix;
    const named = objects.filter((o) => o.key === prefix + name);
    const sized = size === undefined ? [] : objects.filter((o) => o.size === size && o.key !== prefix + name && o.key.endsWith(".wacz"));
    const found: Candidate[] = [];
    for (const o of [...named, ...sized]) {
      // A recorded hash that differs rules an object out without downloading it.
      if (hash && o.key !== prefix + name && ((await storedHash(this.settings, o.key).catch(() => null)) ?? hash) !== hash) continue;
      found.push({ where: `s3://${this.settings.bucket}/${o.key}`, size: o.size, local: (into) => this.download(o.key, into) });
    }
    return found;
  }

  private async download(key: string, into: string): Promise<string> {
    const path = join(into, downloadName(basename(key)));
    await downloadObject(this.settings, key.slice(this.settings.keyPrefix.length), path).catch((err: unknown) => {
      throw new PlaceError(`cannot download s3://${this.settings.bucket}/${key}: ${err instanceof Error ? err.message : String(err)}`);
    });
    return path;
  }
}

/** The store's settings for the bucket and folder of an s3://bucket/key URL, and the object's name there. */
export function s3Location(url: string, settings: StoreSettings | null): { settings: StoreSettings; name: string } {
  const parsed = new URL(url);
  if (!settings) throw new PlaceError(`${url}: an s3:// source needs the store's STORE_ENDPOINT_URL (and STORE_ACCESS_KEY, STORE_SECRET_KEY) set`);
  const key = decodeURIComponent(parsed.pathname.slice(1));
  const folder = key.slice(0, key.lastIndexOf("/") + 1);
  return { settings: { ...settings, bucket: parsed.hostname, keyPrefix: folder }, name: key.slice(folder.length) };
}
