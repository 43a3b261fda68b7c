import { createWriteStream } from "node:fs";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { StoreSettings } from "./storeSettings.js";

/**
 * Fetch `name` (relative to STORE_PATH, as browsertrix-crawler reads `--profile @name`) from the store into
 * `dest`, at most `maxBytes`, within `timeoutMs` for the whole transfer (no limit when not given: a large WACZ).
 */
export async function downloadObject(settings: StoreSettings, name: string, dest: string, maxBytes = Infinity, timeoutMs?: number): Promise<void> {
  // The S3 SDK is loaded when a profile is downloaded, not at every crawl's start (0.15 s of CPU).
  const [{ GetObjectCommand }, { openS3Client }] = await Promise.all([import("@aws-sdk/client-s3"), import("./s3Client.js")]);
  const client = openS3Client(settings);
  const abort = new AbortController();
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => abort.abort(new Error(`not downloaded within ${timeoutMs / 1000}s`)), timeoutMs);
  try {
    const response = await client.send(new GetObjectCommand({ Bucket: settings.bucket, Key: settings.keyPrefix + name }), { abortSignal: abort.signal });
    let size = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        done(size > maxBytes ? new Error(`larger than ${maxBytes} bytes`) : null, chunk);
      },
    });
    await pipeline(response.Body as Readable, cap, createWriteStream(dest, { mode: 0o600 }), { signal: abort.signal });
  } finally {
    clearTimeout(timer);
    client.destroy();
  }
}
