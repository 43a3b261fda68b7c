import { posix } from "node:path";
import type { RelationRequirement } from "../wacz/index.js";
import type { StoreSettings } from "./storeSettings.js";
import { listStoredObjects, storedHash, storedUrl, type StoredObject } from "./storedObjects.js";

/** A WACZ an uploaded WACZ requires, and where the store holds it (null: not under the store's prefix). */
export interface StoredRequirement extends RelationRequirement {
  url: string | null;
}


/**
 * Where in the store each requirement is: the object whose recorded sha256 is the requirement's hash (uploads
 * keep it with the object, under whatever name STORE_FILENAME gave), or, for an object uploaded without it, the
 * one of the requirement's name and size.
 */
export async function storedRequirements(settings: StoreSettings, requires: readonly RelationRequirement[]): Promise<StoredRequirement[]> {
  if (!requires.length) return [];
  const objects = await listStoredObjects(settings);
  const found: StoredRequirement[] = [];
  for (const required of requires) found.push({ ...required, url: await locate(settings, objects, required) });
  return found;
}

async function locate(settings: StoreSettings, objects: StoredObject[], required: RelationRequirement): Promise<string | null> {
  const named = (o: StoredObject): boolean => posix.basename(o.key) === required.filename;
  const candidates = objects.filter((o) => (required.size === undefined ? named(o) : o.size === required.size)).sort((a, b) => Number(named(b)) - Number(named(a)));
  for (const o of candidates) {
    const hash = await storedHash(settings, o.key).catch(() => null);
    if (hash ? hash === required.hash : named(o)) return storedUrl(settings, o.key);
  }
  return null;
}
