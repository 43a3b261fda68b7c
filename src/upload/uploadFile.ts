import { createReadStream } from "node:fs";
import type { S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { testSeamsFrom } from "../util/testSeams.js";
import { SHA256_METADATA } from "./storedObjects.js";

const MIB = 1024 * 1024;
/** Parts of 16 MiB: up to 4 in flight, so at most 64 MiB of a WACZ are held in memory while it uploads. */
const DEFAULT_PART_SIZE = 16 * MIB;
/** S3 allows 10,000 parts per object; a file too big for 16 MiB parts gets bigger ones. */
const MAX_PARTS = 10_000;
/** S3's smallest part (except the last). */
const MIN_PART_SIZE = 5 * MIB;

/**
 * The part size for a file of `size` bytes; a file smaller than one part is sent with a single PUT.
 * A test seam of `env` (TestSeams.uploadPartMib) lowers it (down to S3's 5 MiB) so that tests reach the
 * multipart path with a small file.
 */
export function partSizeFor(size: number, env: NodeJS.ProcessEnv = process.env): number {
  const testMib = testSeamsFrom(env).uploadPartMib();
  const base = testMib !== undefined ? Math.max(MIN_PART_SIZE, testMib * MIB) : DEFAULT_PART_SIZE;
  return Math.max(base, Math.ceil(size / (MAX_PARTS - 1)));
}

/**
 * Put one local file at bucket/key: a single PUT below the part size, a multipart upload above it (its
 * parts are aborted on failure, so a failed upload leaves nothing billed behind). Each call reads the
 * file anew, so a retry sends it whole again. The file's sha256, when given, is kept with the object: a WACZ
 * that requires this one finds it by hash under whatever name the store gave it.
 */
export async function uploadFile(client: S3Client, bucket: string, key: string, path: string, size: number, sha256Hex?: string): Promise<void> {
  const upload = new Upload({
    client,
    params: { Bucket: bucket, Key: key, Body: createReadStream(path), ContentType: "application/wacz", ...(sha256Hex ? { Metadata: { [SHA256_METADATA]: sha256Hex } } : {}) },
    partSize: partSizeFor(size),
    queueSize: 4,
    leavePartsOnError: false,
  });
  await upload.done();
}
