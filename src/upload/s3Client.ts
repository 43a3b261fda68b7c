import { S3Client } from "@aws-sdk/client-s3";
import type { StoreSettings } from "./storeSettings.js";

// The SDK supports Node 20 until 2027 but warns about it on stderr at the first request, in the middle
// of our JSON log; it stays quiet when the user has not asked otherwise.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

/**
 * The S3 client for the store: path-style addressing (MinIO, Ceph, s3rver and AWS all accept it), the
 * region of STORE_REGION, checksums only where the API requires them (several S3-compatible servers
 * reject the newer default ones). A connection gets 15 s to open and a stalled socket is dropped after
 * 2 minutes, so an upload can fail (and be retried) but never hang. The SDK itself retries a failed
 * request (one part of a multipart upload) twice more with backoff.
 */
export function openS3Client(settings: StoreSettings): S3Client {
  return new S3Client({
    endpoint: settings.endpoint,
    region: settings.region,
    forcePathStyle: true,
    credentials: { accessKeyId: settings.accessKey, secretAccessKey: settings.secretKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 15_000, socketTimeout: 120_000 },
  });
}
