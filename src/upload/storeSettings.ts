import { hostname } from "node:os";
import { timestampDigits } from "../archive/warcDate.js";

/**
 * Where finished WACZ files go, read from browsertrix-crawler's environment variables (never from flags
 * or the config file: they hold credentials).
 */
export interface StoreSettings {
  /** scheme://host:port of the S3 API (path-style addressing). */
  endpoint: string;
  bucket: string;
  /** Key prefix inside the bucket: what follows the bucket in STORE_ENDPOINT_URL + STORE_PATH. */
  keyPrefix: string;
  /** STORE_ENDPOINT_URL + STORE_PATH as a URL: the webhook's `filename` is this + the object's name. */
  publicPrefix: string;
  accessKey: string;
  secretKey: string;
  region: string;
  /** STORE_FILENAME: the object's name, with @ts, @hostname, @hostsuffix and @id filled in. */
  filenameTemplate: string;
  /** STORE_USER: passed back as `user` in the webhook's JSON. */
  user: string;
  /** WEBHOOK_URL: http(s):// gets a JSON POST per uploaded WACZ; redis://host:port/db/key gets it pushed on a list. */
  webhookUrl: string | null;
}

export const DEFAULT_STORE_FILENAME = "@ts-@id.wacz";
const DEFAULT_REGION = "us-east-1";

/** A STORE_* or WEBHOOK_URL value that cannot work: said in one line before the crawl starts. */
export class StoreSettingsError extends Error {}

/** The upload settings, or null when STORE_ENDPOINT_URL is not set (nothing is uploaded). */
export function readStoreSettings(env: NodeJS.ProcessEnv): StoreSettings | null {
  if (!env.STORE_ENDPOINT_URL) return null;
  // As browsertrix-crawler does: STORE_PATH is appended to the endpoint as it is, without a separator.
  const joined = env.STORE_ENDPOINT_URL + (env.STORE_PATH ?? "");
  let url: URL;
  try {
    url = new URL(joined);
  } catch {
    throw new StoreSettingsError(`STORE_ENDPOINT_URL (+ STORE_PATH) is not a URL: ${JSON.stringify(joined)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new StoreSettingsError(`STORE_ENDPOINT_URL must be an http:// or https:// URL, got ${JSON.stringify(env.STORE_ENDPOINT_URL)}`);
  }
  const bucket = url.pathname.slice(1).split("/")[0] ?? "";
  if (!bucket) {
    throw new StoreSettingsError(`STORE_ENDPOINT_URL must name the bucket as its first path segment (http://host:port/bucket/), got ${JSON.stringify(env.STORE_ENDPOINT_URL)}`);
  }
  const filenameTemplate = env.STORE_FILENAME || DEFAULT_STORE_FILENAME;
  if (filenameTemplate.startsWith("/")) throw new StoreSettingsError(`STORE_FILENAME must be a relative name, got ${JSON.stringify(filenameTemplate)}`);
  const webhookUrl = env.WEBHOOK_URL || null;
  if (webhookUrl && !/^https?:\/\/[^/]/.test(webhookUrl) && !/^redis:\/\/[^/]+\/\d+\/[^/]+$/.test(webhookUrl)) {
    throw new StoreSettingsError(`WEBHOOK_URL must be an http(s):// URL or redis://host:port/db/key, got ${JSON.stringify(webhookUrl)}`);
  }
  const publicUrl = new URL(url.href);
  publicUrl.username = "";
  publicUrl.password = "";
  return {
    endpoint: url.origin,
    bucket,
    keyPrefix: decodeURIComponent(url.pathname.slice(bucket.length + 2)),
    publicPrefix: publicUrl.href,
    accessKey: env.STORE_ACCESS_KEY ?? "",
    secretKey: env.STORE_SECRET_KEY ?? "",
    region: env.STORE_REGION || DEFAULT_REGION,
    filenameTemplate,
    user: env.STORE_USER ?? "",
    webhookUrl,
  };
}

/**
 * STORE_FILENAME with its placeholders filled in, each at its first occurrence as browsertrix-crawler
 * does: @ts (UTC time to the millisecond, digits only), @hostname, @hostsuffix (its last 14
 * characters) and @id (the crawl id).
 */
export function interpolateStoreFilename(template: string, crawlId: string, now = new Date(), host = hostname()): string {
  return template
    .replace("@ts", timestampDigits(now))
    .replace("@hostname", host)
    .replace("@hostsuffix", host.slice(-14))
    .replace("@id", crawlId);
}
