import { stat } from "node:fs/promises";
import { basename, extname } from "node:path";
import type { Cluster, Redis } from "ioredis";
import { logger } from "../log/logger.js";
import { sha256OfFile } from "../wacz/index.js";
import { relationRequiresOf } from "../wacz/reader/index.js";
import { crawlStateKeys } from "../state/stateKeys.js";
import { DEFAULT_BACKOFF, withBackoff } from "./backoff.js";
import { interpolateStoreFilename, type StoreSettings } from "./storeSettings.js";
import { storedRequirements } from "./storedRequirements.js";
import { notifyWebhook, WebhookRefusedError, type WebhookBody } from "./webhook.js";

/** An upload (or its webhook call) that failed after every retry: exit code 22, the WACZ stays on disk. */
export class UploadFailedError extends Error {}

export interface WaczUploads {
  settings: StoreSettings;
  crawlId: string;
  /** The crawl-state Redis: which WACZ files were uploaded already, and the object names taken. */
  stateRedis: Redis | Cluster;
  /** The WACZ files this process packaged. */
  waczPaths: string[];
  /** Whether the crawl ran to its end (the webhook's `completed`). */
  completed: boolean;
}

/**
 * Put each WACZ file into the store as STORE_PATH + STORE_FILENAME (filled in), and tell WEBHOOK_URL.
 * A file uploaded before with the same bytes (a crawl resumed after an interrupted run packaged it) is
 * not sent again. Throws UploadFailedError when a file or its webhook call failed after every retry.
 */
export async function uploadWaczFiles({ settings, crawlId, stateRedis, waczPaths, completed }: WaczUploads): Promise<void> {
  const keys = crawlStateKeys(crawlId, stateRedis.isCluster);
  // The S3 SDK takes about 0.1 s and 25 MB to load: only crawls that upload load it.
  const [{ openS3Client }, { uploadFile }] = await Promise.all([import("./s3Client.js"), import("./uploadFile.js")]);
  const client = openS3Client(settings);
  try {
    for (const localPath of waczPaths) {
      const localName = basename(localPath);
      const { size } = await stat(localPath);
      const hash = await sha256OfFile(localPath);
      const before = await stateRedis.hget(keys.uploadedWacz, localName);
      const uploaded = before ? (JSON.parse(before) as UploadedWacz) : null;
      let name: string;
      if (uploaded && uploaded.hash === hash) {
        name = uploaded.path;
        // Recorded without `told` only when the upload worked and the webhook call failed: tell it now.
        if (uploaded.told !== false || !settings.webhookUrl) {
          logger.info("storage", "WACZ uploaded before: not sent again", { localPath, path: uploaded.path, hash });
          continue;
        }
        logger.info("storage", "WACZ uploaded before, the webhook not told yet: telling it", { localPath, path: name });
      } else {
        name = await claimObjectName(stateRedis, keys.uploadNames, interpolateStoreFilename(settings.filenameTemplate, crawlId));
        const key = settings.keyPrefix + name;
        logger.info("storage", "uploading WACZ", { localPath, bucket: settings.bucket, key, endpoint: settings.endpoint, size });
        try {
          await withBackoff(`upload of ${localName} to ${whereOf(settings, name)}`, () => uploadFile(client, settings.bucket, key, localPath, size, hash));
        } catch (err) {
          throw new UploadFailedError(`upload failed: ${localPath} could not be put at ${whereOf(settings, name)} in ${DEFAULT_BACKOFF.attempts} attempts: ${describe(err)} (the WACZ is kept on disk)`);
        }
        const record: UploadedWacz = { path: name, hash, ...(settings.webhookUrl ? { told: false } : {}) };
        await stateRedis.hset(keys.uploadedWacz, localName, JSON.stringify(record));
        logger.milestone("storage", "WACZ uploaded", { localPath, bucket: settings.bucket, key, size, hash });
      }
      if (!settings.webhookUrl) continue;
      const requires = await storedRequirements(settings, await relationRequiresOf(localPath));
      const body: WebhookBody = { id: crawlId, user: settings.user, filename: settings.publicPrefix + name, path: name, size, hash, bytes: size, completed, requires };
      const webhookUrl = settings.webhookUrl;
      try {
        await withBackoff(`webhook call for ${name}`, () => notifyWebhook(webhookUrl, body), { isPermanent: (err) => err instanceof WebhookRefusedError });
      } catch (err) {
        throw new UploadFailedError(`webhook failed: ${localName} was uploaded to ${whereOf(settings, name)}, but ${redactedUrl(webhookUrl)} could not be told: ${describe(err)} (run the same command again to retry the call)`);
      }
      await stateRedis.hset(keys.uploadedWacz, localName, JSON.stringify({ path: name, hash, told: true } satisfies UploadedWacz));
      logger.info("storage", "webhook told", { webhook: redactedUrl(webhookUrl), path: name });
    }
  } finally {
    client.destroy();
  }
}

/** What the crawl-state Redis keeps per uploaded WACZ; `told: false` = the webhook call after it failed. */
interface UploadedWacz {
  path: string;
  hash: string;
  told?: boolean;
}

function whereOf(settings: StoreSettings, name: string): string {
  return `${settings.endpoint}/${settings.bucket}/${settings.keyPrefix + name}`;
}

/** `wanted`, or `<stem>-2<ext>`, `-3`... when another WACZ of the crawl (this process's or another's) has it. */
async function claimObjectName(redis: Redis | Cluster, namesKey: string, wanted: string): Promise<string> {
  const ext = extname(wanted);
  const stem = wanted.slice(0, wanted.length - ext.length);
  for (let n = 1; ; n++) {
    const name = n === 1 ? wanted : `${stem}-${n}${ext}`;
    if ((await redis.sadd(namesKey, name)) === 1) return name;
  }
}

/** An SDK or socket error in one line: S3's error code and message, or the network error's code. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const message = err.message || (err instanceof AggregateError ? err.errors.map((e: unknown) => describe(e)).join("; ") : "");
  const label = err.name && err.name !== "Error" ? err.name : typeof code === "string" ? code : "";
  return (label && !message.includes(label) ? `${label}: ${message}` : message || label).replace(/\s+/g, " ");
}

function redactedUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/, "//***@");
}
