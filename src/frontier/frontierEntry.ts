import { createHash } from "node:crypto";

/** A page waiting in, or taken from, the shared queue. */
export interface QueuedPage {
  url: string;
  depth: number;
  /** Index of the seed whose scope this page belongs to. */
  seedId: number;
  /** Links followed outside the seed's scope to reach this page. */
  extraHops: number;
}

export interface FailedPage {
  url: string;
  depth: number;
  /** The page's seed and hops beyond its scope (not kept by failures recorded before these were). */
  seedId?: number;
  extraHops?: number;
  reason: string;
  attempts: number;
}

/**
 * A queue entry as Redis keeps it: "<depth>,<seedId>,<extraHops>,<url>", a few bytes besides the URL
 * (the JSON of older builds spent ~45). The Lua scripts read the depth from the front.
 */
export function packEntry(page: QueuedPage): string {
  return `${page.depth},${page.seedId},${page.extraHops},${page.url}`;
}

export function unpackEntry(entry: string): QueuedPage {
  const a = entry.indexOf(",");
  const b = entry.indexOf(",", a + 1);
  const c = entry.indexOf(",", b + 1);
  if (a < 0 || b < 0 || c < 0) throw new Error(`not a frontier entry: ${entry.slice(0, 80)}`);
  return { depth: Number(entry.slice(0, a)), seedId: Number(entry.slice(a + 1, b)), extraHops: Number(entry.slice(b + 1, c)), url: entry.slice(c + 1) };
}

/**
 * A page key's fingerprint in the seen set: `member`, 64 bits of its SHA-1 as a signed decimal (Redis
 * keeps it as an 8-byte integer), and `bucket`, 32 further bits choosing its bucket at every level. Two
 * keys are taken for one only if all 64 member bits match within one bucket (odds in docs/user-guide/scaling.md).
 */
export interface Fingerprint {
  member: string;
  bucket: number;
}

export function fingerprint(key: string): Fingerprint {
  const digest = createHash("sha1").update(key).digest();
  return { member: digest.readBigInt64BE(0).toString(), bucket: digest.readUInt32BE(8) };
}

/** The shard of a page: all pages of one host share one (so a host's politeness is one shard's business). */
export function shardOf(url: string, shards: number): number {
  if (shards <= 1) return 0;
  let host: string;
  try {
    host = new URL(url).host;
  } catch {
    host = url;
  }
  return createHash("sha1").update(host).digest().readUInt32BE(0) % shards;
}
