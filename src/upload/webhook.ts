import { Redis } from "ioredis";
import { request } from "undici";
import type { StoredRequirement } from "./storedRequirements.js";

/** What browsertrix-crawler sends for each uploaded WACZ (its field names and order). */
export interface WebhookBody {
  /** The crawl id. */
  id: string;
  /** STORE_USER. */
  user: string;
  /** STORE_ENDPOINT_URL + STORE_PATH + the object's name. */
  filename: string;
  /** The object's name (STORE_FILENAME filled in). */
  path: string;
  size: number;
  /** sha256 of the WACZ, hex without a prefix. */
  hash: string;
  /** The size again: browsertrix-crawler keeps it for older readers. */
  bytes: number;
  /** Whether the crawl ran to its end; false for a WACZ of an interrupted or stopped crawl. */
  completed: boolean;
  /**
   * The WACZ files this one's relation.requires lists (a deduplicated crawl's revisits point into them), each with
   * the URL the store holds it at (STORE_ENDPOINT_URL + STORE_PATH + its name), or null when it is not there.
   */
  requires: StoredRequirement[];
}

const TIMEOUT_MS = 30_000;

/**
 * Tell WEBHOOK_URL about an uploaded WACZ: a JSON POST to an http(s):// URL (any 2xx is taken; a 5xx or a
 * network error throws, to be retried), or, for redis://host:port/db/key, the JSON pushed on that list.
 */
export async function notifyWebhook(webhookUrl: string, body: WebhookBody): Promise<void> {
  const json = JSON.stringify(body);
  if (webhookUrl.startsWith("redis://")) {
    await pushToRedis(webhookUrl, json);
    return;
  }
  const response = await request(webhookUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: json,
    headersTimeout: TIMEOUT_MS,
    bodyTimeout: TIMEOUT_MS,
  });
  await response.body.dump();
  if (response.statusCode >= 500) throw new Error(`the webhook answered ${response.statusCode}`);
  if (response.statusCode >= 300) throw new WebhookRefusedError(`the webhook answered ${response.statusCode}`);
}

/** A 3xx/4xx answer: asking again would get the same, so it is not retried. */
export class WebhookRefusedError extends Error {}

async function pushToRedis(webhookUrl: string, json: string): Promise<void> {
  const lastSlash = webhookUrl.lastIndexOf("/");
  const redis = new Redis(webhookUrl.slice(0, lastSlash), { lazyConnect: true, connectTimeout: TIMEOUT_MS, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on("error", () => {}); // the failure is thrown by connect/rpush below
  try {
    await redis.connect();
    await redis.rpush(decodeURIComponent(webhookUrl.slice(lastSlash + 1)), json);
  } finally {
    redis.disconnect();
  }
}
