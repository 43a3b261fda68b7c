import type { StoreSettings } from "./storeSettings.js";

/** An object of the store, under its key prefix. */
export interface StoredObject {
  /** The whole key, prefix included. */
  key: string;
  size: number;
}

/** The metadata key an uploaded WACZ's sha256 (hex) is kept under, so it can be matched without reading it. */
export const SHA256_METADATA = "sha256";

/** Every object under the store's key prefix (all pages of the listing). */
export async function listStoredObjects(settings: StoreSettings): Promise<StoredObject[]> {
  const [{ ListObjectsV2Command }, { openS3Client }] = await Promise.all([import("@aws-sdk/client-s3"), import("./s3Client.js")]);
  const client = openS3Client(settings);
  const objects: StoredObject[] = [];
  try {
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: settings.bucket, Prefix: settings.keyPrefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key && o.Size !== undefined) objects.push({ key: o.Key, size: o.Size });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  } finally {
    client.destroy();
  }
  return objects;
}

/** sha256:<hex> an upload recorded with the object, or null (uploaded without it, e.g. by another tool). */
export async function storedHash(settings: StoreSettings, key: string): Promise<string | null> {
  const [{ HeadObjectCommand }, { openS3Client }] = await Promise.all([import("@aws-sdk/client-s3"), import("./s3Client.js")]);
  const client = openS3Client(settings);
  try {
    const head = await client.send(new HeadObjectCommand({ Bucket: settings.bucket, Key: key }));
    const hex = head.Metadata?.[SHA256_METADATA];
    return hex && /^[0-9a-f]{64}$/.test(hex) ? `sha256:${hex}` : null;
  } finally {
    client.destroy();
  }
}

/** The public URL of an object under the store's prefix: STORE_ENDPOINT_URL + STORE_PATH + its name, as the webhook gives it. */
export const storedUrl = (settings: StoreSettings, key: string): string => settings.publicPrefix + key.slice(settings.keyPrefix.length);
